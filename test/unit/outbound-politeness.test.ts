// Politeness per target address (src/net/address-slots.ts) through the outbound guard the lane
// processes build (createProductRuntime: OUTBOUND_CONNECTIONS_PER_ADDRESS and
// OUTBOUND_ADDRESS_INTERVAL_MS), against real loopback servers that count the connections they hold
// at once: many checks fetching pages of one address at once never hold more than the configured
// connections to it, another address is not held back by it, raw TCP connections take the same
// slots until their socket closes, and connections to one address start at least the interval apart.
// Shared between workspaces (issue 32): one workspace's backlog on an address holds at most its
// share of the address's slots while another waits; the other's connection takes the next freed
// slot, not a place behind the backlog (before: one line in arrival order across workspaces).
import http from 'node:http';
import type net from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import type { OutboundGuard } from '../../src/net/outbound-guard.ts';
import { AddressSlots } from '../../src/net/address-slots.ts';
import { listenOnHosts, type Listening } from '../lab/multi-host.ts';
import { LAB_ALLOW } from '../lab/addresses.ts';

const A = '127.0.0.81';
const B = '127.0.0.82';

/** A server per address that answers after `delayMs` and records connections held at once and their start times. */
function countingServer(delayMs: number) {
  const stats = { open: 0, most: 0, starts: [] as number[], paths: [] as string[] };
  const server = http.createServer((req, res) => {
    stats.paths.push(req.url ?? '');
    setTimeout(() => res.end('ok'), delayMs);
  });
  server.keepAliveTimeout = 1;
  server.on('connection', (s: net.Socket) => {
    stats.open++;
    stats.most = Math.max(stats.most, stats.open);
    stats.starts.push(performance.now());
    s.once('close', () => stats.open--);
  });
  return { server, stats };
}

describe('politeness per target address', () => {
  const servers = { a: countingServer(80), b: countingServer(80) };
  let listening: Listening;
  let guard: OutboundGuard;

  beforeAll(async () => {
    listening = await listenOnHosts([
      { host: A, server: servers.a.server },
      { host: B, server: servers.b.server },
    ]);
    const config = parseConfig({
      ...process.env,
      ALLOW_PRIVATE_TARGETS: LAB_ALLOW,
      OUTBOUND_PORT_MAP: `80=${listening.port}`,
      OUTBOUND_CONNECTIONS_PER_ADDRESS: '2',
      OUTBOUND_ADDRESS_INTERVAL_MS: '0',
      LOG_LEVEL: 'silent',
    });
    guard = createProductRuntime(config, pino({ level: 'silent' })).services.outbound!;
  });
  afterAll(() => listening?.close());

  it("twelve checks fetching one address's pages at once hold at most two connections to it; another address is served meanwhile", async () => {
    const fetches = Array.from({ length: 12 }, (_, i) =>
      // Each as its own check (forCheck): the slots are the process's, not a check's.
      guard.forCheck().fetch(`http://${A}/page${i}`, { timeoutMs: 20_000 }),
    );
    const other = guard.fetch(`http://${B}/`, { timeoutMs: 20_000 });
    const replies = await Promise.all([...fetches, other]);
    expect(replies.map((r) => r.status)).toEqual(Array(13).fill(200));
    expect(servers.a.stats.most).toBe(2);
    expect(servers.a.stats.starts).toHaveLength(12);
    expect(servers.b.stats.most).toBe(1);
    expect(guard.slots?.openTo(A)).toBe(0);
  });

  it("one workspace's backlog on an address never stands in front of another workspace's connection to it", async () => {
    const before = servers.a.stats.paths.length;
    const slots = guard.slots!;
    // Workspace 1: twelve checks of pages on A at once (two connect, ten wait for a slot).
    const backlog = Array.from({ length: 12 }, (_, i) =>
      guard.forTenant('ws-1').forCheck().fetch(`http://${A}/ws1-${i}`, { timeoutMs: 20_000 }),
    );
    const end = Date.now() + 10_000;
    while (slots.waitingFor(A) < 10 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect([slots.openTo(A, 'ws-1'), slots.waitingFor(A, 'ws-1')]).toEqual([2, 10]);
    // Workspace 2 arrives behind that backlog with one page of the same address.
    const other = guard.forTenant('ws-2').forCheck().fetch(`http://${A}/ws2`, { timeoutMs: 20_000 });
    const replies = await Promise.all([...backlog, other]);
    expect(replies.map((r) => r.status)).toEqual(Array(13).fill(200));
    const order = servers.a.stats.paths.slice(before);
    // The first slot freed went to workspace 2 (it had none open): its request came third, not last.
    expect(order.indexOf('/ws2')).toBe(2);
    expect(servers.a.stats.most).toBe(2);
    expect(slots.openTo(A)).toBe(0);
  });

  it('the slots of one address are shared max-min between workspaces: a freed slot goes to whoever holds fewer', async () => {
    const slots = new AddressSlots({ connections: 2, intervalMs: 0 });
    const [one, two] = [slots.forTenant('1'), slots.forTenant('2')];
    const granted: string[] = [];
    const take = (view: AddressSlots, name: string) =>
      view.acquire(A).then((release) => {
        granted.push(name);
        return release;
      });
    const held = [await take(one, '1a'), await take(one, '1b')];
    const waiting = [take(one, '1c'), take(one, '1d'), take(two, '2a'), take(two, '2b')];
    await new Promise((r) => setTimeout(r, 10));
    expect([slots.openTo(A, '1'), slots.waitingFor(A, '1'), slots.waitingFor(A, '2')]).toEqual([2, 2, 2]);
    held[0]!.release(); // 1 holds one, 2 none: 2's first waiter, though 1's waiters came first
    await new Promise((r) => setTimeout(r, 10));
    expect(granted).toEqual(['1a', '1b', '2a']);
    held[1]!.release(); // 1 holds none, 2 one: 1's next waiter
    await new Promise((r) => setTimeout(r, 10));
    expect(granted).toEqual(['1a', '1b', '2a', '1c']);
    const [r1c, r1d, r2a, r2b] = waiting;
    (await r2a!).release(); // 1 holds one, 2 none: 2's next waiter
    await new Promise((r) => setTimeout(r, 10));
    expect(granted).toEqual(['1a', '1b', '2a', '1c', '2b']);
    (await r1c!).release(); // 1 holds none, 2 one: 1's last waiter
    await new Promise((r) => setTimeout(r, 10));
    expect(granted).toEqual(['1a', '1b', '2a', '1c', '2b', '1d']);
    (await r1d!).release();
    (await r2b!).release();
    expect([slots.openTo(A), slots.waitingFor(A)]).toEqual([0, 0]);
  });

  it('a raw connection holds its slot until its socket closes', async () => {
    const raw = await Promise.all([
      guard.connectTcp({ address: A, port: 80 }),
      guard.connectTcp({ address: A, port: 80 }),
    ]);
    expect(guard.slots?.openTo(A)).toBe(2);
    let third: net.Socket | undefined;
    const waiting = guard.connectTcp({ address: A, port: 80 }).then((s) => (third = s));
    await new Promise((r) => setTimeout(r, 200));
    expect(third).toBeUndefined(); // no slot: it waits
    raw[0]!.destroy();
    await waiting;
    expect(third).toBeDefined();
    raw[1]!.destroy();
    third!.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(guard.slots?.openTo(A)).toBe(0);
  });

  it('connections to one address start at least the interval apart; an aborted wait gives its place up', async () => {
    // Four at once from the start: the window starts at its cap here (pacing is what is measured).
    const slots = new AddressSlots({ connections: 10, intervalMs: 60, initialWindow: 10 });
    const started: number[] = [];
    const releases = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const release = await slots.acquire(A);
        started.push(performance.now());
        return release;
      }),
    );
    started.sort((x, y) => x - y);
    for (let i = 1; i < started.length; i++) expect(started[i]! - started[i - 1]!).toBeGreaterThanOrEqual(55);
    for (const r of releases) r.release();
    const one = new AddressSlots({ connections: 1, intervalMs: 0 });
    const held = await one.acquire(B);
    const ac = new AbortController();
    const gaveUp = one.acquire(B, ac.signal);
    ac.abort(new Error('check over'));
    await expect(gaveUp).rejects.toThrow('check over');
    held.release();
    expect(one.openTo(B)).toBe(0);
    const next = await one.acquire(B);
    expect(one.openTo(B)).toBe(1);
    next.release();
  });
});
