// One consumer of one stream in one consumer group: the acks, reclaims, dead-lettering and
// trimming every stream worker needs, in one place. The handler decides what an entry means and
// whether it may be acknowledged; this class decides when entries are read, reclaimed or dropped.
//
// - Reads with XREADGROUP BLOCK on a dedicated connection (a blocked connection serves nothing
//   else), never more entries than free slots, so a slow handler applies back-pressure.
// - Entries of dead consumers are reclaimed with XAUTOCLAIM after `visibilityMs` idle. Entries
//   this consumer is still working on are touched (XCLAIM JUSTID, which does not count as a
//   delivery) so a long task is not stolen from a live consumer.
// - An entry delivered more than `maxDeliveries` times goes to `deadLetter` instead of `handle`:
//   it must record the failure durably before the entry is acknowledged. Never silence.
// - A handler that throws leaves the entry pending: it is reclaimed after `visibilityMs`.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChainableCommander, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { duplicateRedis, redisReady, type RedisClient } from '../redis/client.ts';
import { fieldsToRecord } from './stream-ids.ts';
import { trimToPending } from './stream-trim.ts';

export interface Delivery {
  id: string;
  fields: Record<string, string>;
  /** Deliveries of this entry so far, this one included (1 for a first read). */
  deliveries: number;
  /** Aborted when shutdown gives up waiting for this entry. */
  signal: AbortSignal;
}

/** `with` adds commands that must run in the same MULTI as the XACK (e.g. publishing a notice). */
export type Settlement = { ack: true; with?: (tx: ChainableCommander) => void } | { ack: false };
export const ACK: Settlement = { ack: true };
export const RETAIN: Settlement = { ack: false };

export interface StreamConsumerOptions {
  redis: RedisClient;
  stream: string;
  group: string;
  consumer: string;
  log: Logger;
  concurrency: number;
  visibilityMs: number;
  maxDeliveries: number;
  handle(d: Delivery): Promise<Settlement>;
  deadLetter(d: Delivery): Promise<Settlement>;
  batch?: number;
  blockMs?: number;
  claimEveryMs?: number;
  /** 0 disables trimming by this consumer. */
  trimEveryMs?: number;
  /** Consumers idle this long with nothing pending are removed from the group. */
  forgetConsumersAfterMs?: number;
  /** How long close() waits for in-flight entries before aborting them. */
  drainTimeoutMs?: number;
}

interface InFlight {
  promise: Promise<void>;
  abort: AbortController;
}

type ReadReply = Array<[string, Array<[string, string[] | null]>]> | null;

export class StreamConsumer {
  readonly #o: Required<StreamConsumerOptions>;
  readonly #stop = new AbortController();
  readonly #inflight = new Map<string, InFlight>();
  #waiters: Array<() => void> = [];
  #reader: RedisClient | undefined;
  #loops: Promise<void>[] = [];
  #closing: Promise<void> | undefined;

  constructor(opts: StreamConsumerOptions) {
    const claimEveryMs = opts.claimEveryMs ?? Math.max(50, Math.min(Math.floor(opts.visibilityMs / 3), 5000));
    this.#o = {
      batch: 32,
      blockMs: 2000,
      trimEveryMs: 30_000,
      forgetConsumersAfterMs: 3600_000,
      drainTimeoutMs: 10_000,
      ...opts,
      claimEveryMs,
    };
  }

  get stream(): string {
    return this.#o.stream;
  }

  get inFlight(): number {
    return this.#inflight.size;
  }

  async start(): Promise<void> {
    await this.ensureGroup();
    this.#reader = duplicateRedis(this.#o.redis);
    this.#reader.on('error', () => {}); // the loop reports failures; avoid unhandled 'error' events
    await redisReady(this.#reader);
    this.#loops.push(this.#readLoop());
    this.#loops.push(this.#every(this.#o.claimEveryMs, () => this.#claimTick()));
    if (this.#o.trimEveryMs > 0) this.#loops.push(this.#every(this.#o.trimEveryMs, () => this.#trimTick()));
  }

  /** Group at id 0 so entries added before the group existed (e.g. after a stream was deleted) are read. */
  async ensureGroup(): Promise<void> {
    try {
      await this.#o.redis.xgroup('CREATE', this.#o.stream, this.#o.group, '0', 'MKSTREAM');
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message)) throw err;
    }
  }

  /** Stop reading, wait for in-flight entries (bounded), then abort the rest. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#stop.abort();
    this.#wake();
    this.#reader?.disconnect(); // unblocks a pending XREADGROUP
    await Promise.allSettled(this.#loops);
    const drained = Promise.allSettled([...this.#inflight.values()].map((f) => f.promise));
    const timer = sleep(this.#o.drainTimeoutMs, 'timeout' as const, { ref: false });
    if ((await Promise.race([drained, timer])) === 'timeout') {
      this.#o.log.warn(
        { stream: this.#o.stream, inFlight: this.#inflight.size },
        'shutdown: aborting in-flight entries (left pending)',
      );
      for (const f of this.#inflight.values()) f.abort.abort(new Error('shutdown'));
      await Promise.race([drained, sleep(2000, undefined, { ref: false })]);
    }
  }

  #stopped(): boolean {
    return this.#stop.signal.aborted;
  }

  async #every(ms: number, fn: () => Promise<void>): Promise<void> {
    while (!this.#stopped()) {
      try {
        await fn();
      } catch (err) {
        if (!this.#stopped())
          this.#o.log.warn({ err: errInfo(err), stream: this.#o.stream }, 'stream maintenance failed');
      }
      await sleep(ms, undefined, { signal: this.#stop.signal }).catch(() => {});
    }
  }

  #free(): number {
    return this.#o.concurrency - this.#inflight.size;
  }

  #waitForSlot(): Promise<void> {
    if (this.#free() > 0 || this.#stopped()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  async #readLoop(): Promise<void> {
    let failures = 0;
    while (!this.#stopped()) {
      await this.#waitForSlot();
      if (this.#stopped()) break;
      const count = Math.min(this.#o.batch, this.#free());
      if (count <= 0) continue;
      let reply: ReadReply;
      try {
        reply = (await this.#reader!.xreadgroup(
          'GROUP',
          this.#o.group,
          this.#o.consumer,
          'COUNT',
          count,
          'BLOCK',
          this.#o.blockMs,
          'STREAMS',
          this.#o.stream,
          '>',
        )) as ReadReply;
        failures = 0;
      } catch (err) {
        if (this.#stopped()) break;
        // The stream (and its group) vanished: Redis flushed or the key was deleted. Recreate and
        // carry on; the reconciler re-enqueues whatever was lost from MySQL.
        if (/NOGROUP/.test((err as Error).message)) {
          await this.ensureGroup().catch(() => {});
        } else {
          failures++;
          this.#o.log.warn({ err: errInfo(err), stream: this.#o.stream }, 'stream read failed');
        }
        await sleep(Math.min(100 * 2 ** Math.min(failures, 5), 2000), undefined, { signal: this.#stop.signal }).catch(
          () => {},
        );
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) this.#dispatch(id, fieldsToRecord(fields), 1, false);
      }
    }
  }

  #dispatch(id: string, fields: Record<string, string>, deliveries: number, dead: boolean): void {
    if (this.#inflight.has(id)) return;
    const abort = new AbortController();
    const d: Delivery = { id, fields, deliveries, signal: abort.signal };
    const promise = (async () => {
      try {
        const s = dead ? await this.#o.deadLetter(d) : await this.#o.handle(d);
        if (s.ack) await this.#ack(id, s.with);
      } catch (err) {
        this.#o.log.error(
          { err: errInfo(err), stream: this.#o.stream, entry: id },
          'stream entry failed; left pending for redelivery',
        );
      }
    })().finally(() => {
      this.#inflight.delete(id);
      this.#wake();
    });
    this.#inflight.set(id, { promise, abort });
  }

  async #ack(id: string, also?: (tx: ChainableCommander) => void): Promise<void> {
    const tx = this.#o.redis.multi();
    also?.(tx);
    tx.xack(this.#o.stream, this.#o.group, id);
    const results = await tx.exec();
    for (const [err] of results ?? []) if (err) throw err;
  }

  async #claimTick(): Promise<void> {
    const { redis, stream, group, consumer } = this.#o;
    // Keep our own long-running entries from looking idle (JUSTID: no delivery is counted).
    const mine = [...this.#inflight.keys()];
    // (Typed through Redis: TypeScript cannot pick this variadic overload on the Redis | Cluster union.)
    if (mine.length > 0) await (redis as Redis).xclaim(stream, group, consumer, 0, ...mine, 'JUSTID');
    let cursor = '0-0';
    for (let round = 0; round < 10 && !this.#stopped(); round++) {
      const free = this.#free();
      if (free <= 0) return;
      const reply = (await redis.xautoclaim(stream, group, consumer, this.#o.visibilityMs, cursor, 'COUNT', free)) as [
        string,
        Array<[string, string[] | null]>,
        string[]?,
      ];
      const [next, entries] = reply;
      const live = entries.filter(([id, fields]) => fields !== null && !this.#inflight.has(id));
      if (live.length > 0) {
        const counts = await this.#deliveryCounts(live.map(([id]) => id));
        for (const [id, fields] of live) {
          const n = counts.get(id);
          if (n === undefined) continue; // claimed away from us in between
          this.#dispatch(id, fieldsToRecord(fields), n, n > this.#o.maxDeliveries);
        }
      }
      if (next === '0-0') break;
      cursor = next;
    }
    await this.#forgetIdleConsumers();
  }

  /** Exact per-entry counts (one pipelined XPENDING per id); an entry no longer ours is absent. */
  async #deliveryCounts(ids: string[]): Promise<Map<string, number>> {
    const p = this.#o.redis.pipeline();
    for (const id of ids) p.xpending(this.#o.stream, this.#o.group, id, id, 1, this.#o.consumer);
    const out = new Map<string, number>();
    for (const [err, rows] of (await p.exec()) ?? []) {
      if (err) throw err;
      for (const [id, , , n] of rows as Array<[string, string, number, number]>) out.set(id, Number(n));
    }
    return out;
  }

  #lastForget = 0;

  async #forgetIdleConsumers(): Promise<void> {
    if (Date.now() - this.#lastForget < 60_000) return;
    this.#lastForget = Date.now();
    const rows = (await this.#o.redis.xinfo('CONSUMERS', this.#o.stream, this.#o.group)) as unknown[][];
    for (const row of rows) {
      const f = fieldsToRecord(row.map(String));
      if (
        f.name &&
        f.name !== this.#o.consumer &&
        Number(f.pending) === 0 &&
        Number(f.idle) > this.#o.forgetConsumersAfterMs
      ) {
        await this.#o.redis.xgroup('DELCONSUMER', this.#o.stream, this.#o.group, f.name);
      }
    }
  }

  async #trimTick(): Promise<void> {
    await trimToPending(this.#o.redis, this.#o.stream);
  }
}

export function errInfo(err: unknown): { message: string; name?: string } {
  return err instanceof Error ? { message: err.message, name: err.name } : { message: String(err) };
}
