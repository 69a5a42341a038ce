// The web role's Redis client coalesces the writes of one event-loop turn (src/redis/client.ts
// coalesceWrites). Against the run's real Redis (single node: the option is not applied to a
// cluster client): one write per turn, replies matched in order, scripts unaffected, and a
// connection lost while corked settles every command instead of leaving it hanging.
import net, { type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { afterWrite, closeRedis, createRedis, redisReady, type RedisClient } from '../../src/redis/client.ts';
import { RateLimiter } from '../../src/ratelimit/limiter.ts';
import { IdempotencyLeases, leaseFound } from '../../src/idempotency/lease.ts';
import type { RatePolicy } from '../../src/ratelimit/policies.ts';
import { testPrefix } from '../helpers/redis.ts';

const url = process.env.REDIS_URL;
const opened: RedisClient[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => closeRedis(c).catch(() => {})));
});

async function client(coalesceWrites: boolean): Promise<Redis> {
  if (!url) throw new Error('needs REDIS_URL: run with `npm test`');
  const c = createRedis({ url }, testPrefix('coalesce'), { commandTimeoutMs: 2000, coalesceWrites }) as Redis;
  c.on('error', () => {});
  opened.push(c);
  await redisReady(c);
  return c;
}

/** Counts the socket writes (each is one write or writev system call) made from now on. */
function countWrites(c: Redis): () => number {
  const socket = (
    c as unknown as { stream: Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void } }
  ).stream;
  let n = 0;
  const write = socket._write.bind(socket);
  const writev = socket._writev.bind(socket);
  socket._write = (...args: unknown[]) => {
    n++;
    return write(...args);
  };
  socket._writev = (...args: unknown[]) => {
    n++;
    return writev(...args);
  };
  return () => n;
}

async function fiftyInOneTurn(c: Redis): Promise<Array<string | null>> {
  const ops: Array<Promise<unknown>> = [];
  for (let i = 0; i < 25; i++) {
    ops.push(c.set(`k${i}`, `v${i}`));
    ops.push(c.get(`k${i}`));
  }
  const out = await Promise.all(ops);
  return out.filter((_, i) => i % 2 === 1) as Array<string | null>;
}

describe('coalesced Redis writes', () => {
  it('sends the commands of one turn in one write and matches every reply in order', async () => {
    const c = await client(true);
    const writes = countWrites(c);
    const got = await fiftyInOneTurn(c);
    expect(got).toEqual(Array.from({ length: 25 }, (_, i) => `v${i}`));
    expect(writes()).toBe(1);
    // The next turn starts a new write.
    await c.get('k0');
    expect(writes()).toBe(2);
  });

  it('without the option, each command is its own write (what the option saves)', async () => {
    const c = await client(false);
    const writes = countWrites(c);
    await fiftyInOneTurn(c);
    expect(writes()).toBe(50);
  });

  it('leaves the admission script and the lease script correct under concurrency', async () => {
    const c = await client(true);
    const limiter = new RateLimiter(c);
    const leases = new IdempotencyLeases(c, { leaseMs: 60_000, ttlHours: 1 });
    const p: RatePolicy = { name: 'co', limit: 60, windowSeconds: 60, burst: 2, scope: 'application' };
    const subjects = Array.from({ length: 30 }, (_, i) => String(2_000_000 + i));
    const asked = subjects.map((s) => leases.request(Number(s), 1, 'k', 'fp'));
    // Three rounds for each subject in one turn: two pass, the third is refused (burst 2).
    const rounds = await Promise.all(
      subjects.flatMap((s, i) => [
        limiter.consume(s, [p], asked[i]!.tail),
        limiter.consume(s, [p]),
        limiter.consume(s, [p]),
      ]),
    );
    for (let i = 0; i < subjects.length; i++) {
      const [first, second, third] = rounds.slice(3 * i, 3 * i + 3);
      expect([first!.allowed, second!.allowed, third!.allowed]).toEqual([true, true, false]);
      expect(leaseFound(first!.tail!).state).toBe('claimed');
    }
    const held = await Promise.all(
      subjects.map((s, i) =>
        leases.finish(
          { applicationId: Number(s), apiKeyId: 1, key: 'k', fingerprint: 'fp', token: asked[i]!.token },
          true,
        ),
      ),
    );
    expect(held).toEqual(subjects.map(() => true));
  });

  it('settles every command when the connection drops while the socket is corked', async () => {
    const c = await client(true);
    const ops = Array.from({ length: 20 }, (_, i) => c.set(`drop${i}`, 'x'));
    (c as unknown as { stream: Socket }).stream.destroy();
    const settled = await Promise.race([
      Promise.allSettled(ops),
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 5000)),
    ]);
    expect(settled).not.toBe('hung');
    expect((settled as PromiseSettledResult<unknown>[]).length).toBe(20);
  });

  it('runs afterWrite callbacks once the commands of the turn have left, in order', async () => {
    const c = await client(true);
    const writes = countWrites(c);
    const seen: string[] = [];
    void c.set('aw1', 'x');
    afterWrite(c, () => seen.push(`first after ${writes()} write(s)`));
    void c.set('aw2', 'y');
    afterWrite(c, () => seen.push('second'));
    expect(seen).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['first after 1 write(s)', 'second']);
    // Nothing corked: at once.
    afterWrite(c, () => seen.push('now'));
    expect(seen.at(-1)).toBe('now');
  });

  it('times out a command Redis never answers, with one shared timer (503 material, not a hang)', async () => {
    // A server that answers ioredis' connection handshake (HELLO as a RESP3 map, CLIENT SETINFO, the INFO ready
    // check) and then nothing at all.
    const server = net.createServer((socket) => {
      socket.on('data', (data) => {
        for (const [, name] of data.toString('latin1').matchAll(/\*\d+\r\n\$\d+\r\n(\w+)/g)) {
          const command = name!.toLowerCase();
          if (command === 'hello') socket.write('%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n');
          else if (command === 'client') socket.write('+OK\r\n');
          else if (command === 'info') {
            const info = '# Server\r\nloading:0\r\n';
            socket.write(`$${info.length}\r\n${info}\r\n`);
          }
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const c = createRedis({ url: `redis://127.0.0.1:${port}` }, 'silent:', {
      commandTimeoutMs: 200,
      coalesceWrites: true,
    }) as Redis;
    c.on('error', () => {});
    opened.push(c);
    try {
      await redisReady(c);
      const started = Date.now();
      const outcomes = await Promise.allSettled([c.get('a'), c.get('b')]);
      expect(outcomes.map((o) => o.status === 'rejected' && (o.reason as Error).message)).toEqual([
        'Command timed out',
        'Command timed out',
      ]);
      // Within 1-1.25 timeouts by design; generous here for a shared machine.
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    } finally {
      c.disconnect();
      server.close();
    }
  });
});
