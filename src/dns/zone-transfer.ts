// A zone transfer (AXFR, RFC 5936) over a TCP connection the caller opened through the outbound
// guard: the question, then the stream of messages until the SOA that opened the zone closes it,
// a refusal, or the caps (records, time). Names are collected for the caller (owners and the
// names CNAME, NS, PTR and MX records point at); the records themselves are not kept.
import type net from 'node:net';
import { randomInt } from 'node:crypto';
import * as packet from 'dns-packet';
import { DnsFrameReader, frameMessage } from './tcp-frames.ts';

export type TransferOutcome = 'allowed' | 'refused' | 'timeout' | 'failed';

export interface TransferResult {
  outcome: TransferOutcome;
  records: number;
  names: string[];
}

const normal = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

/** Asks for `zone` on `socket` and reads the transfer; destroys the socket when done. Never rejects. */
export function transferOverStream(
  socket: net.Socket,
  zone: string,
  opts: { timeoutMs: number; maxRecords: number },
): Promise<TransferResult> {
  const query = packet.encode({
    type: 'query',
    id: randomInt(0, 0x10000),
    flags: 0,
    questions: [{ type: 'AXFR', name: zone, class: 'IN' }],
  });
  return new Promise((resolve) => {
    const frames = new DnsFrameReader();
    let soas = 0;
    let records = 0;
    const names = new Set<string>();
    let done = false;
    const finish = (outcome: TransferOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ outcome: records > 0 && outcome !== 'refused' ? 'allowed' : outcome, records, names: [...names] });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs);
    socket.on('error', () => finish('failed'));
    socket.on('close', () => finish(records > 0 ? 'allowed' : 'failed'));
    socket.on('data', (chunk: Buffer) => {
      for (const message of frames.push(chunk)) {
        if (done) return;
        let msg: packet.DecodedPacket;
        try {
          msg = packet.decode(message);
        } catch {
          return finish('failed');
        }
        if (((msg.flags ?? 0) & 0xf) !== 0) return finish('refused');
        for (const a of msg.answers ?? []) {
          records++;
          names.add(normal(a.name));
          if (a.type === 'SOA') soas++;
          if (a.type === 'CNAME' || a.type === 'NS' || a.type === 'PTR') names.add(normal(String(a.data)));
          if (a.type === 'MX') names.add(normal(String((a.data as { exchange: string }).exchange)));
        }
        // An AXFR ends with the SOA it started with.
        if (soas >= 2 || records >= opts.maxRecords) return finish('allowed');
        if ((msg.answers ?? []).length === 0) return finish('refused');
      }
    });
    socket.write(frameMessage(query));
  });
}
