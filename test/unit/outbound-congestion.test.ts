// Congestion control per target address (issue 48 item 1, HTTP half; src/net/address-slots.ts,
// address-window.ts): through the outbound guard the lane processes build (createProductRuntime),
// against lab web servers on loopback that limit their clients as real ones do
// (test/lab/limited-http.ts):
//   - a server that serves 2 connections at once and resets the rest: 30 checks at once all end
//     with its page, none `connection_failed` (before: a fixed 6 slots per address, 4 of every 6
//     connections reset and reported as the target's failure);
//   - a server that answers 503 beyond 2 at once: every check ends with an answer, and the window
//     slows down to it (before: nearly every check got the 503);
//   - an address that resets every connection answers none: each check fails as before, once (no
//     retry), and its window is not cut (it is unreachable, not rate limiting);
//   - time a connection waits in our process is not the target's time (before: the exchange's
//     budget ran from the call, so the second of two fetches behind one slot timed out), and a
//     connection not attempted within OUTBOUND_QUEUE_WAIT_MS comes back `congested`, a local
//     failure the lane gives back, never a timeout or a failed connection of the target; a check
//     whose own time runs out while its connection waits here is given back too (before:
//     `timeout` / check_timeout);
//   - the metrics of the windows are in the registry.
import client from 'prom-client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { OutboundFetchError, type OutboundGuard } from '../../src/net/outbound-guard.ts';
import { collectLocalFailures } from '../../src/net/local-failures.ts';
import { OUTBOUND_NOT_ATTEMPTED } from '../../src/net/slot-failure.ts';
import { registerAddressSlotsMetrics } from '../../src/net/address-slots-metrics.ts';
import { executeCheck } from '../../workers/lane-runner/execute-check.ts';
import type { CheckSpec } from '../../src/products/kit/product-contract.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';
import { listenOnHosts, type Listening } from '../lab/multi-host.ts';
import { limitedHttpServer } from '../lab/limited-http.ts';
import { LAB_ALLOW } from '../lab/addresses.ts';

const RESETS = '127.0.0.84';
const THROTTLES = '127.0.0.85';
const DEAD = '127.0.0.86';
const SLOW = '127.0.0.87';

const resets = limitedHttpServer({ limit: 2, mode: 'reset', delayMs: 60 });
const throttles = limitedHttpServer({ limit: 2, mode: '503', delayMs: 60 });
const dead = limitedHttpServer({ limit: 0, mode: 'dead', delayMs: 0 });
const slow = limitedHttpServer({ limit: 100, mode: 'reset', delayMs: 500 });

function guardWith(port: number, env: Record<string, string>): OutboundGuard {
  const config = parseConfig({
    ...process.env,
    ALLOW_PRIVATE_TARGETS: LAB_ALLOW,
    OUTBOUND_PORT_MAP: `80=${port}`,
    OUTBOUND_ADDRESS_INTERVAL_MS: '0',
    LOG_LEVEL: 'silent',
    ...env,
  });
  return createProductRuntime(config, pino({ level: 'silent' })).services.outbound!;
}

describe('congestion windows per target address', () => {
  let listening: Listening;
  let guard: OutboundGuard;

  beforeAll(async () => {
    listening = await listenOnHosts([
      { host: RESETS, server: resets.server },
      { host: THROTTLES, server: throttles.server },
      { host: DEAD, server: dead.server },
      { host: SLOW, server: slow.server },
    ]);
    guard = guardWith(listening.port, { OUTBOUND_CONNECTIONS_PER_ADDRESS: '6' });
  });
  afterAll(() => listening?.close());

  it('a server that serves 2 connections at once and resets the rest: 30 checks at once all get its page', async () => {
    const settled = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => guard.forCheck().fetch(`http://${RESETS}/p${i}`, { timeoutMs: 20_000 })),
    );
    const failures = settled.flatMap((s) =>
      s.status === 'rejected' ? [(s.reason as OutboundFetchError).kind ?? String(s.reason)] : [],
    );
    expect(failures).toEqual([]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.status : 0))).toEqual(Array(30).fill(200));
    expect(resets.stats.served).toBe(30);
    expect(resets.stats.reset).toBeGreaterThan(0); // it did limit us: the window found its limit
    const stats = guard.slots!.stats();
    expect(stats.cuts.drop).toBeGreaterThan(0);
    expect(stats.retried).toBe(resets.stats.reset);
    expect(guard.slots!.windowOf(RESETS)).toBeLessThan(6);
    expect(guard.slots!.openTo(RESETS)).toBe(0);
  });

  it('a server that answers 503 beyond 2 at once: every check gets an answer, and the window slows down to it', async () => {
    const settled = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => guard.forCheck().fetch(`http://${THROTTLES}/p${i}`, { timeoutMs: 20_000 })),
    );
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    const statuses = settled.map((s) => (s.status === 'fulfilled' ? s.value.status : 0));
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    // A fixed 6 places at once: every freed place is taken again at once and answered 503 at once
    // (32 of the 40 in a run of the old code). The window is cut by the 503 bursts (13 in a run).
    expect(throttles.stats.throttled).toBeLessThan(20);
    expect(guard.slots!.stats().cuts.throttle).toBeGreaterThan(0);
  });

  it('an address that answers none is unreachable, as before: each check fails once, and its window is not cut', async () => {
    const cutsBefore = guard.slots!.stats().cuts.drop;
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => guard.forCheck().fetch(`http://${DEAD}/p${i}`, { timeoutMs: 20_000 })),
    );
    const kinds = settled.map((s) => (s.status === 'rejected' ? (s.reason as OutboundFetchError).kind : 'answered'));
    expect(kinds).toEqual(Array(10).fill('connection_failed'));
    expect(dead.stats.accepted).toBe(10); // no connection attempted again
    expect(guard.slots!.stats().cuts.drop).toBe(cutsBefore);
  });

  it("time a connection waits in our process for a place is not the target's time", async () => {
    const one = guardWith(listening.port, { OUTBOUND_CONNECTIONS_PER_ADDRESS: '1' });
    // Two fetches behind one place, each with 800 ms: the server takes 500 ms for each, so the
    // second waits ~500 ms here and then needs ~500 ms of the target's time.
    const settled = await Promise.allSettled([
      one.forCheck().fetch(`http://${SLOW}/a`, { timeoutMs: 800 }),
      one.forCheck().fetch(`http://${SLOW}/b`, { timeoutMs: 800 }),
    ]);
    const outcomes = settled.map((s) =>
      s.status === 'fulfilled' ? s.value.status : (s.reason as OutboundFetchError).kind,
    );
    expect(outcomes).toEqual([200, 200]);
  });

  it("a connection not attempted within OUTBOUND_QUEUE_WAIT_MS is `congested`, a local failure the lane gives back, never the target's", async () => {
    const short = guardWith(listening.port, { OUTBOUND_CONNECTIONS_PER_ADDRESS: '1', OUTBOUND_QUEUE_WAIT_MS: '150' });
    const accepted = slow.stats.accepted;
    const first = short.forCheck().fetch(`http://${SLOW}/held`, { timeoutMs: 5000 });
    while (short.slots!.openTo(SLOW) === 0) await new Promise((r) => setTimeout(r, 5));
    const second = collectLocalFailures(() => short.forCheck().fetch(`http://${SLOW}/queued`, { timeoutMs: 5000 }));
    const raw = collectLocalFailures(() => short.connectTcp({ address: SLOW, port: 80 }, { timeoutMs: 5000 }));
    expect((await first).status).toBe(200);
    for (const r of [await second, await raw]) {
      expect(r.ok).toBe(false);
      const err = (r as { error: unknown }).error;
      expect(err).toBeInstanceOf(OutboundFetchError);
      expect((err as OutboundFetchError).kind).toBe('congested');
      expect(r.codes).toEqual([OUTBOUND_NOT_ATTEMPTED]);
    }
    expect(slow.stats.accepted - accepted).toBe(1); // nothing of the other two reached the target
    expect(short.slots!.stats().expired).toBe(2);

    // Through the lane's check runner: whatever the check makes of it, the task is given back.
    const output = (status: 'completed' | 'timeout'): CheckOutput => ({
      status,
      projection: {},
      objects: [],
      relations: [],
      findings: [],
      limitations: [],
      sources: [],
    });
    const spec: CheckSpec = {
      name: 'congested_fetch',
      lane: 'web',
      timeoutMs: 10_000,
      run: async (_task, ctx) => {
        try {
          await short.forCheck(ctx.signal).fetch(`http://${SLOW}/lane`, { timeoutMs: 5000, signal: ctx.signal });
          return output('completed');
        } catch {
          // A check that reads the failure as the target's: it must not become the outcome.
          return output('timeout');
        }
      },
    };
    const task = { id: 1, objectKey: 'host:slow', target: SLOW, params: {}, distance: 0 } as unknown as LaneTask;
    const holder = short.forCheck().fetch(`http://${SLOW}/held-again`, { timeoutMs: 5000 });
    while (short.slots!.openTo(SLOW) === 0) await new Promise((r) => setTimeout(r, 5));
    const ran = await executeCheck(
      spec,
      task,
      { runtime: {} as never },
      new AbortController().signal,
      pino({ level: 'silent' }),
    );
    await holder;
    expect(ran).toEqual({ kind: 'local_failure', codes: [OUTBOUND_NOT_ATTEMPTED] });
  });

  it("a check whose time runs out while its connection waits in our queue is given back, not the target's timeout", async () => {
    const one = guardWith(listening.port, { OUTBOUND_CONNECTIONS_PER_ADDRESS: '1' });
    const holder = one.forCheck().fetch(`http://${SLOW}/held`, { timeoutMs: 5000 });
    while (one.slots!.openTo(SLOW) === 0) await new Promise((r) => setTimeout(r, 5));
    const spec: CheckSpec = {
      name: 'queued_fetch',
      lane: 'web',
      timeoutMs: 200, // runs out while the holder keeps the only place (500 ms)
      run: async (_task, ctx) => {
        await one.forCheck(ctx.signal).fetch(`http://${SLOW}/queued`, { timeoutMs: 5000, signal: ctx.signal });
        return {
          status: 'completed',
          projection: {},
          objects: [],
          relations: [],
          findings: [],
          limitations: [],
          sources: [],
        };
      },
    };
    const task = { id: 2, objectKey: 'host:slow', target: SLOW, params: {}, distance: 0 } as unknown as LaneTask;
    const log = pino({ level: 'silent' });
    const ran = await executeCheck(spec, task, { runtime: {} as never }, new AbortController().signal, log);
    expect(ran).toEqual({ kind: 'local_failure', codes: [OUTBOUND_NOT_ATTEMPTED] });
    expect((await holder).status).toBe(200);
    // A check that times out at the target (its connection attempted, the answer slow) is a timeout.
    const slowAtTarget = await executeCheck(
      { ...spec, timeoutMs: 200 },
      task,
      { runtime: {} as never },
      new AbortController().signal,
      log,
    );
    expect(slowAtTarget).toMatchObject({ kind: 'done', status: 'timeout', reason: 'check_timeout' });
  });

  it('the windows are in the metrics registry', async () => {
    const registry = new client.Registry();
    registerAddressSlotsMetrics(registry, guard.slots);
    const text = await registry.metrics();
    for (const name of [
      'lss_outbound_connections_waiting 0',
      'lss_outbound_addresses_limited',
      'lss_outbound_address_window_smallest',
      'lss_outbound_local_waits_expired_total 0',
      'lss_outbound_connections_retried_total',
      'lss_outbound_window_cuts_total{why="drop"}',
      'lss_outbound_window_cuts_total{why="throttle"}',
    ])
      expect(text).toContain(name);
    expect(text).toMatch(/lss_outbound_addresses_limited [1-9]/);
  });
});
