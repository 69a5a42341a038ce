// The benchmark's paced generator must do what its figures claim: spread requests evenly over
// time (not a burst per second) and charge a stalled server for every request due during the
// stall (no coordinated omission). Margins are wide: these check the shape, not a speed.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pacedLoad } from '../bench/bench-kit.ts';

let server: http.Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function serve(handler: (arrivedAt: number) => void): Promise<string> {
  server = http.createServer((req, res) => {
    handler(performance.now());
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const job = (url: string) => ({
  url,
  method: 'POST' as const,
  path: '/x',
  body: '{}',
  headers: () => ({ 'content-type': 'application/json' }),
  rate: 200,
  durationS: 1,
  connections: 20,
});

describe('pacedLoad', () => {
  it('spreads the requests over the second instead of sending them at its start', async () => {
    const arrivals: number[] = [];
    const url = await serve((t) => arrivals.push(t));
    const r = await pacedLoad(job(url));
    expect(r.requests).toBe(200);
    expect(r.errors + r.non2xx).toBe(0);
    const first = arrivals[0]!;
    const buckets = new Array<number>(10).fill(0);
    for (const t of arrivals) buckets[Math.min(9, Math.floor((t - first) / 100))]!++;
    // 20 per 100 ms when even; a once-a-second burst would put all 200 in the first bucket.
    expect(Math.max(...buckets)).toBeLessThan(60);
    expect(buckets.filter((n) => n > 0).length).toBe(10);
  });

  it('counts latency from when a request was due, so a stall is charged to every request behind it', async () => {
    let stalled = false;
    const url = await serve(() => {
      if (stalled) return;
      stalled = true;
      // Block this event loop for 300 ms on the first request: about 60 requests fall due meanwhile.
      const until = performance.now() + 300;
      while (performance.now() < until);
    });
    const r = await pacedLoad(job(url));
    expect(r.requests).toBe(200);
    // A closed-loop client with per-send timing would report about one slow request, not 60.
    expect(r.p99).toBeGreaterThan(150);
    expect(r.max).toBeGreaterThan(250);
  });
});
