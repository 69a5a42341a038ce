// The cost of reading a DNS message over TCP dripped one byte per chunk (issue 30 item 8), per KiB,
// at three sizes, in one run: the project's reader (src/dns/tcp-frames.ts) against the way the
// three readers worked before (Buffer.concat of the whole buffer with every chunk). Linear work
// keeps the time per KiB flat as the message grows; the old way grows it with the size.
// No sockets: the chunks are pushed in process, so the figure is the reader's own work.
// `node_modules/.bin/node test/bench/dns-drip.ts` (BENCH_DRIP_KIB=4,16,63 by default).
import { DnsFrameReader } from '../../src/dns/tcp-frames.ts';
import { fmt } from './bench-kit.ts';

const SIZES_KIB = (process.env.BENCH_DRIP_KIB ?? '4,16,63').split(',').map(Number);

function stream(kib: number): Buffer[] {
  const length = Math.min(kib * 1024, 0xffff);
  const frame = Buffer.alloc(2 + length, 0x61);
  frame.writeUInt16BE(length, 0);
  return Array.from({ length: frame.length }, (_, i) => frame.subarray(i, i + 1));
}

function readerWay(chunks: Buffer[]): number {
  const reader = new DnsFrameReader();
  let got = 0;
  for (const c of chunks) for (const m of reader.push(c)) got += m.length;
  return got;
}

/** Before: the whole buffer joined with every chunk, the length read each time. */
function concatWay(chunks: Buffer[]): number {
  let buffered = Buffer.alloc(0);
  for (const c of chunks) {
    buffered = Buffer.concat([buffered, c]);
    if (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) return buffered.subarray(2).length;
  }
  return 0;
}

function best(fn: (c: Buffer[]) => number, chunks: Buffer[], reps: number): number {
  let ms = Number.POSITIVE_INFINITY;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn(chunks);
    ms = Math.min(ms, performance.now() - t0);
  }
  return ms;
}

readerWay(stream(1));
concatWay(stream(1));
console.log('size KiB | reader ms/KiB | Buffer.concat per chunk ms/KiB | ratio');
for (const kib of SIZES_KIB) {
  const chunks = stream(kib);
  const r = best(readerWay, chunks, 5) / kib;
  const c = best(concatWay, chunks, kib > 16 ? 1 : 3) / kib;
  console.log(`${String(kib).padStart(8)} | ${fmt(r, 4).padStart(13)} | ${fmt(c, 4).padStart(30)} | ${fmt(c / r, 0)}×`);
}
