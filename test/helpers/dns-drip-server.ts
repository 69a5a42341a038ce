// A DNS-over-TCP server that drips its replies one byte per write (test/unit/dns-tcp-drip.test.ts),
// run in a worker thread so that what the test counts (the copies made by the asking side) is
// only the asking side's. Two kinds of answer: a reply to the question asked (TXT records making
// about `replyBytes`), or, for an AXFR question, a transfer of `transferRecords` A records between
// two SOAs, in several messages. The port is posted back once listening.
import net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import * as packet from 'dns-packet';

const { replyBytes, transferRecords } = workerData as { replyBytes: number; transferRecords: number };

const frame = (m: Buffer) => {
  const f = Buffer.alloc(2 + m.length);
  f.writeUInt16BE(m.length, 0);
  m.copy(f, 2);
  return f;
};

function replies(query: packet.DecodedPacket): Buffer[] {
  const q = query.questions![0]!;
  const soa = {
    name: q.name,
    type: 'SOA' as const,
    ttl: 60,
    data: {
      mname: `ns.${q.name}`,
      rname: `h.${q.name}`,
      serial: 1,
      refresh: 1,
      retry: 1,
      expire: 1,
      minimum: 1,
    },
  };
  const reply = (answers: packet.Answer[]) =>
    packet.encode({ type: 'response', id: query.id, flags: packet.AUTHORITATIVE_ANSWER, questions: [q], answers });
  if ((q.type as string) === 'AXFR') {
    const hosts = Array.from({ length: transferRecords }, (_, i) => ({
      name: `h${i}.${q.name}`,
      type: 'A' as const,
      ttl: 60,
      data: `127.0.9.${i % 250}`,
    }));
    const out: Buffer[] = [reply([soa, ...hosts.slice(0, transferRecords / 2)])];
    out.push(reply([...hosts.slice(transferRecords / 2), soa]));
    return out;
  }
  const strings = Math.ceil(replyBytes / 260);
  const txt = Array.from({ length: strings }, (_, i) => ({
    name: q.name,
    type: 'TXT' as const,
    ttl: 60,
    data: [`${i}`.padEnd(250, 'x')],
  }));
  return [reply(txt)];
}

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let buf = Buffer.alloc(0);
  socket.on('data', async (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    if (buf.length < 2 || buf.length < 2 + buf.readUInt16BE(0)) return;
    const query = packet.decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
    const bytes = Buffer.concat(replies(query).map(frame));
    for (let i = 0; i < bytes.length && !socket.destroyed; i++) {
      socket.write(bytes.subarray(i, i + 1));
      // One byte per turn of the loop: each write leaves as its own segment.
      await new Promise((r) => setImmediate(r));
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  parentPort!.postMessage({ port: (server.address() as net.AddressInfo).port });
});
parentPort!.on('message', (m) => {
  if (m === 'close') server.close(() => process.exit(0));
});
