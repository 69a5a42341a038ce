// DNS over TCP under a slow drip (issue 30 item 8): a peer that sends its reply one byte per
// segment must cost the asking side linear work. Before, each of the three readers (the stub
// resolver's TCP exchange, a question on a stream the caller opened, the zone transfer) joined its
// whole buffer with every chunk (Buffer.concat per 'data' event): n bytes dripped one at a time
// copied about n²/2 bytes, so a 16 KiB reply made ~130 MB of copies and a 64 KiB one ~2 GiB.
//
// What is measured: the bytes the asking side copies while it reads (Buffer.concat,
// Buffer#copy and Uint8Array#set, the ways JavaScript copies a buffer), against the bytes that
// arrived. The dripping server runs in a worker thread (test/helpers/dns-drip-server.ts), so
// only the reader's copies are counted. The bound is 3 copies per byte: the readers copy once.
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryOverStream } from '../../src/dns/stream-query.ts';
import { DnsFrameReader } from '../../src/dns/tcp-frames.ts';
import { tcpExchange } from '../../src/dns/transport.ts';
import { acceptReply, buildQuery } from '../../src/dns/wire.ts';
import { transferOverStream } from '../../src/dns/zone-transfer.ts';

const REPLY_BYTES = 16 * 1024;
const TRANSFER_RECORDS = 600;
const COPIES_PER_BYTE = 3;

/** The bytes copied by `fn`'s thread while it runs, and the 'data' events sockets emitted. */
async function measured<T>(fn: () => Promise<T>): Promise<{ value: T; copied: number; chunks: number; bytes: number }> {
  const concat = Buffer.concat;
  const copy = Buffer.prototype.copy;
  const set = Uint8Array.prototype.set;
  const emit = net.Socket.prototype.emit;
  let copied = 0;
  let chunks = 0;
  let bytes = 0;
  Buffer.concat = ((list: readonly Uint8Array[], total?: number) => {
    const out = concat(list, total);
    copied += out.length;
    return out;
  }) as typeof Buffer.concat;
  Buffer.prototype.copy = function (this: Buffer, ...args: Parameters<Buffer['copy']>) {
    const n = copy.apply(this, args);
    copied += n;
    return n;
  };
  Uint8Array.prototype.set = function (this: Uint8Array, src: ArrayLike<number>, offset?: number) {
    copied += src.length;
    return set.call(this, src, offset);
  } as typeof Uint8Array.prototype.set;
  net.Socket.prototype.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]) {
    if (event === 'data') {
      chunks++;
      bytes += (args[0] as Buffer).length;
    }
    return Reflect.apply(emit, this, [event, ...args]) as boolean;
  } as typeof net.Socket.prototype.emit;
  try {
    const value = await fn();
    return { value, copied, chunks, bytes };
  } finally {
    Buffer.concat = concat;
    Buffer.prototype.copy = copy;
    Uint8Array.prototype.set = set;
    net.Socket.prototype.emit = emit;
  }
}

describe('DNS over TCP: a reply dripped one byte at a time costs linear copying', () => {
  let worker: Worker;
  let port: number;

  beforeAll(async () => {
    worker = new Worker(new URL('../helpers/dns-drip-server.ts', import.meta.url), {
      workerData: { replyBytes: REPLY_BYTES, transferRecords: TRANSFER_RECORDS },
    });
    port = await new Promise<number>((resolve, reject) => {
      worker.once('message', (m: { port: number }) => resolve(m.port));
      worker.once('error', reject);
    });
  });

  afterAll(async () => {
    await worker?.terminate();
  });

  const connect = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => resolve(s));
      s.once('error', reject);
    });

  /** The drip really dripped: most of the bytes came in chunks of a few bytes. */
  const expectDripped = (m: { chunks: number; bytes: number }) => {
    expect(m.bytes).toBeGreaterThan(REPLY_BYTES / 2);
    expect(m.chunks, `${m.bytes} bytes in ${m.chunks} chunks`).toBeGreaterThan(m.bytes / 64);
  };

  it('a question on a stream the caller opened (stream-query.ts)', async () => {
    const socket = await connect();
    try {
      const m = await measured(() => queryOverStream(socket, 'drip.test', 'TXT', { timeoutMs: 60_000 }));
      expect(m.value.outcome).toBe('answer');
      expect(m.value.answers.length).toBeGreaterThan(50);
      expectDripped(m);
      expect(m.copied, `${m.copied} bytes copied for ${m.bytes} received`).toBeLessThanOrEqual(
        COPIES_PER_BYTE * m.bytes,
      );
    } finally {
      socket.destroy();
    }
  }, 90_000);

  it("the stub resolver's TCP exchange (transport.ts)", async () => {
    const query = buildQuery(4242, 'drip.test', 'TXT');
    const m = await measured(() =>
      tcpExchange(
        { host: '127.0.0.1', port },
        query,
        (buf) => acceptReply(buf, 4242, 'drip.test', 'TXT'),
        AbortSignal.timeout(60_000),
      ),
    );
    expect(m.value.kind).toBe('reply');
    expectDripped(m);
    // The query frame the exchange writes is copied once too.
    expect(m.copied, `${m.copied} bytes copied for ${m.bytes} received`).toBeLessThanOrEqual(
      COPIES_PER_BYTE * m.bytes + 2 * query.length,
    );
  }, 90_000);

  it('a zone transfer, several messages on one stream (zone-transfer.ts)', async () => {
    const socket = await connect();
    const m = await measured(() => transferOverStream(socket, 'drip.test', { timeoutMs: 60_000, maxRecords: 5000 }));
    expect(m.value.outcome).toBe('allowed');
    expect(m.value.records).toBe(TRANSFER_RECORDS + 2);
    expect(m.value.names).toContain(`h${TRANSFER_RECORDS - 1}.drip.test`);
    expectDripped(m);
    expect(m.copied, `${m.copied} bytes copied for ${m.bytes} received`).toBeLessThanOrEqual(
      COPIES_PER_BYTE * m.bytes + 512,
    );
  }, 90_000);
});

describe('DnsFrameReader: any cutting of any messages', () => {
  const messages = fc.array(fc.uint8Array({ minLength: 0, maxLength: 3000 }), { minLength: 1, maxLength: 6 });

  it('gives back exactly the messages sent, each byte copied once, whatever the chunks (one-byte drips included)', async () => {
    await fc.assert(
      fc.asyncProperty(
        messages,
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 50 }),
        fc.boolean(),
        async (msgs, cuts, drip) => {
          const stream = Buffer.concat(
            msgs.map((m) => {
              const f = Buffer.alloc(2 + m.length);
              f.writeUInt16BE(m.length, 0);
              Buffer.from(m).copy(f, 2);
              return f;
            }),
          );
          const chunks: Buffer[] = [];
          for (let at = 0, i = 0; at < stream.length; i++) {
            const size = drip ? 1 : cuts[i % cuts.length]!;
            chunks.push(Buffer.from(stream.subarray(at, at + size)));
            at += size;
          }
          const reader = new DnsFrameReader();
          const m = await measured(async () => chunks.flatMap((c) => reader.push(c)));
          expect(m.value.map((b) => Buffer.from(b).toString('hex'))).toEqual(
            msgs.map((x) => Buffer.from(x).toString('hex')),
          );
          expect(reader.buffered).toBe(0);
          expect(m.copied).toBeLessThanOrEqual(stream.length);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('holds at most one message: a length prefix announces what is allocated, never more', () => {
    const reader = new DnsFrameReader();
    expect(reader.push(Buffer.from([0xff]))).toEqual([]);
    expect(reader.pendingLength).toBeNull();
    expect(reader.push(Buffer.from([0xff, 1, 2]))).toEqual([]);
    expect(reader.pendingLength).toBe(0xffff);
    expect(reader.buffered).toBe(4);
    // A zero-length message completes with its prefix.
    const zero = new DnsFrameReader();
    expect(zero.push(Buffer.from([0, 0, 0, 1, 7]))).toEqual([Buffer.alloc(0), Buffer.from([7])]);
  });
});
