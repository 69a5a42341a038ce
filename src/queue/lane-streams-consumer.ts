// One lane runner's consumer of the lane's job streams (streams.laneJob: one stream per job with
// tasks on the lane, listed in queueKeys.laneJobs). What StreamConsumer does for one stream, over
// many: acks in a MULTI with the handler's commands, reclaims (XAUTOCLAIM) of dead consumers'
// entries, dead-lettering after `maxDeliveries`, trimming; and, since a job's stream ends with the
// job, dropping a drained stream from the lane's set (dropDrainedStream-2.lua).
//
// Why one stream per job: with one stream per lane, a job's backlog of 20,000 tasks stood in front
// of any task enqueued after it, so another tenant's first check waited for the whole backlog to
// be read. Here every read asks every job stream the runner still `wants` entries of (XREADGROUP
// over many keys: COUNT applies per stream), so a new job's first entries are read within one
// look for newly enqueued jobs (`discoverMs`), whatever the other jobs hold. Which entry then runs is
// the runner's fair share (workers/lane-runner/run-gate.ts); the runner says through `wants` how
// many more entries of a stream it would hold, so a process never hoards a backlog that another
// process could run (work conserving across processes).
//
// What a read costs Redis grows with the keys it names (issue 32: 1,000 monitors due at once are
// 1,000 job streams on a lane), and Redis runs one command at a time. So a read names at most
// MAX_KEYS_PER_READ streams, taking turns through the list (a rotating start), with COUNT such
// that keys × COUNT never passes the room left (one read never takes more than the runner holds);
// and a stream found with nothing undelivered is left out of reads until the lane's set shows a
// newer enqueue to it (its score) or RECHECK_EMPTY_MS passed (a same-millisecond enqueue keeps the
// score: the recheck bounds that case).
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChainableCommander, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { duplicateRedis, redisReady, type RedisClient } from '../redis/client.ts';
import { fieldsToRecord } from './stream-ids.ts';
import { errInfo, type Delivery, type Settlement } from './stream-consumer.ts';
import { groups, queueKeys, streams, type LaneName } from './streams.ts';

const dropLua = readFileSync(new URL('./dropDrainedStream-2.lua', import.meta.url), 'utf8');
const defined = new WeakSet<RedisClient>();
type WithDrop = RedisClient & { dropDrainedStream(stream: string, set: string, job: string): Promise<number> };

/** A delivery from one of the lane's job streams: `stream` is where it is acknowledged. */
export interface LaneDelivery extends Delivery {
  stream: string;
}

export interface LaneStreamsOptions {
  redis: RedisClient;
  lane: LaneName;
  consumer: string;
  log: Logger;
  /** How many more entries of this stream the runner takes now (0: none). */
  wants(stream: string): number;
  /** Entries held at once (read and not yet settled), whatever `wants` says. */
  maxInFlight: number;
  visibilityMs: number;
  maxDeliveries: number;
  handle(d: LaneDelivery): Promise<Settlement>;
  deadLetter(d: LaneDelivery): Promise<Settlement>;
  /** How stale the whole list of job streams may be (ms): a drained job's leaving is seen then. */
  refreshMs?: number;
  /**
   * How often the list is asked for the jobs enqueued since the newest one seen (a range by score:
   * cheap whatever the jobs on the lane), and the longest pause or block of one read (ms): how soon
   * a new job's first entries are read.
   */
  discoverMs?: number;
  /**
   * With no job on the lane at all, the longest block on the lane's wake stream (queueKeys.laneWake,
   * one entry per enqueue) before the list is asked again (0: ask every discoverMs instead). A new
   * job's first entries are read as soon as its enqueue's wake arrives; an idle lane process costs
   * Redis and itself one read per idleBlockMs instead of one per discoverMs (issue 48: CPU).
   */
  idleBlockMs?: number;
  claimEveryMs?: number;
  /** Trimming and dropping drained streams (0: never). */
  trimEveryMs?: number;
  /** A stream whose job enqueued within this long is not looked at for dropping. */
  dropAfterMs?: number;
  drainTimeoutMs?: number;
}

interface InFlight {
  stream: string;
  promise: Promise<void>;
  abort: AbortController;
}

type ReadReply = Array<[string, Array<[string, string[] | null]>]> | null;
const BENIGN_READ_ERROR = /NOGROUP|UNBLOCKED|no longer exists/;
/** Most job streams one XREADGROUP names. */
export const MAX_KEYS_PER_READ = 128;
/** A stream left out of reads as drained is named again at least this often. */
const RECHECK_EMPTY_MS = 1000;
/**
 * The scores are the enqueuers' clocks (Date.now() of an orchestrator): the discovery asks from
 * this long before the newest score seen, and an enqueuer whose clock lags more is seen at the
 * next whole refresh.
 */
const DISCOVER_OVERLAP_MS = 1000;

export class LaneStreamsConsumer {
  readonly #o: Required<LaneStreamsOptions>;
  readonly #group: string;
  readonly #stop = new AbortController();
  readonly #inflight = new Map<string, InFlight>();
  #waiters: Array<() => void> = [];
  #reader: RedisClient | undefined;
  #loops: Promise<void>[] = [];
  #closing: Promise<void> | undefined;
  #jobs: Array<{ job: string; stream: string; enqueuedAt: number }> = [];
  #jobsAt = 0;
  #discoveredAt = 0;
  /** The newest enqueue score seen. */
  #newest = 0;
  /** Streams a read found with nothing undelivered: the enqueue score then, and when. */
  readonly #drained = new Map<string, { score: number; at: number }>();
  /** Where the next read's turn through the wanted streams starts. */
  #turn = 0;
  /** The newest wake entry seen ('0-0': none yet, so the first idle read returns at once). */
  #wakeId = '0-0';

  constructor(o: LaneStreamsOptions) {
    this.#o = {
      refreshMs: 100,
      discoverMs: 25,
      idleBlockMs: 1000,
      claimEveryMs: Math.max(50, Math.min(Math.floor(o.visibilityMs / 3), 5000)),
      trimEveryMs: 5000,
      dropAfterMs: 2000,
      drainTimeoutMs: 10_000,
      ...o,
    };
    this.#group = groups.lane(o.lane);
  }

  get inFlight(): number {
    return this.#inflight.size;
  }

  async start(): Promise<void> {
    if (!defined.has(this.#o.redis)) {
      this.#o.redis.defineCommand('dropDrainedStream', { numberOfKeys: 2, lua: dropLua });
      defined.add(this.#o.redis);
    }
    this.#reader = duplicateRedis(this.#o.redis);
    this.#reader.on('error', () => {}); // the loop reports failures
    await redisReady(this.#reader);
    this.#loops.push(this.#readLoop());
    this.#loops.push(this.#every(this.#o.claimEveryMs, () => this.#claimTick()));
    if (this.#o.trimEveryMs > 0) this.#loops.push(this.#every(this.#o.trimEveryMs, () => this.#dropTick()));
  }

  /** The runner's `wants` may have grown (an entry started or settled): read again now. */
  wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#stop.abort();
    this.wake();
    this.#reader?.disconnect(); // unblocks a pending XREADGROUP
    await Promise.allSettled(this.#loops);
    const drained = Promise.allSettled([...this.#inflight.values()].map((f) => f.promise));
    const timer = sleep(this.#o.drainTimeoutMs, 'timeout' as const, { ref: false });
    if ((await Promise.race([drained, timer])) === 'timeout') {
      this.#o.log.warn(
        { lane: this.#o.lane, inFlight: this.#inflight.size },
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
          this.#o.log.warn({ err: errInfo(err), lane: this.#o.lane }, 'lane stream maintenance failed');
      }
      await sleep(ms, undefined, { signal: this.#stop.signal }).catch(() => {});
    }
  }

  /**
   * Blocks on the lane's wake stream for at most idleBlockMs past the newest wake seen, then has
   * the next turn ask the whole list (a wake missed or lost costs at most one idleBlockMs). A read
   * that fails (Redis away, the reader closed) falls back to a pause of discoverMs.
   */
  async #idleWait(): Promise<void> {
    try {
      const reply = (await this.#reader!.xread(
        'BLOCK',
        this.#o.idleBlockMs,
        'STREAMS',
        queueKeys.laneWake(this.#o.lane),
        this.#wakeId,
      )) as Array<[string, Array<[string, string[]]>]> | null;
      const last = reply?.[0]?.[1]?.at(-1)?.[0];
      if (last) this.#wakeId = last;
    } catch {
      if (this.#stopped()) return;
      await this.#pause(this.#o.discoverMs);
    }
    this.#jobsAt = 0; // the next turn reads the whole list
  }

  /** Waits for wake() or `ms`, whichever comes first. */
  #pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#waiters.push(done);
    });
  }

  #parseJobs(flat: string[]): Array<{ job: string; stream: string; enqueuedAt: number }> {
    const jobs: Array<{ job: string; stream: string; enqueuedAt: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const id = Number(flat[i]);
      if (Number.isSafeInteger(id) && id > 0) {
        const enqueuedAt = Number(flat[i + 1]);
        jobs.push({ job: flat[i]!, stream: streams.laneJob(this.#o.lane, id), enqueuedAt });
        if (enqueuedAt > this.#newest) this.#newest = enqueuedAt;
      }
    }
    return jobs;
  }

  async #jobStreams(force = false): Promise<Array<{ job: string; stream: string; enqueuedAt: number }>> {
    const now = Date.now();
    if (!force && now - this.#jobsAt < this.#o.refreshMs) {
      if (now - this.#discoveredAt < this.#o.discoverMs) return this.#jobs;
      // Between whole refreshes, only the jobs enqueued lately: a new job is read within
      // discoverMs, and what this costs Redis does not grow with the jobs already listed.
      this.#discoveredAt = now;
      const recent = this.#parseJobs(
        (await this.#o.redis.zrangebyscore(
          queueKeys.laneJobs(this.#o.lane),
          String(this.#newest - DISCOVER_OVERLAP_MS),
          '+inf',
          'WITHSCORES',
        )) as string[],
      );
      if (recent.length === 0) return this.#jobs;
      const byJob = new Map(this.#jobs.map((j) => [j.job, j]));
      for (const r of recent) byJob.set(r.job, r);
      this.#jobs = [...byJob.values()];
      return this.#jobs;
    }
    const jobs = this.#parseJobs(
      (await this.#o.redis.zrange(queueKeys.laneJobs(this.#o.lane), '0', '-1', 'WITHSCORES')) as string[],
    );
    this.#jobs = jobs;
    this.#jobsAt = now;
    this.#discoveredAt = now;
    if (this.#drained.size > jobs.length) {
      const listed = new Set(jobs.map((j) => j.stream));
      for (const stream of this.#drained.keys()) if (!listed.has(stream)) this.#drained.delete(stream);
    }
    return jobs;
  }

  async #readLoop(): Promise<void> {
    let failures = 0;
    while (!this.#stopped()) {
      const room = this.#o.maxInFlight - this.#inflight.size;
      if (room <= 0) {
        await this.#pause(this.#o.refreshMs);
        continue;
      }
      let wanted: Array<{ stream: string; n: number; score: number }>;
      try {
        const now = Date.now();
        wanted = [];
        for (const j of await this.#jobStreams()) {
          const drained = this.#drained.get(j.stream);
          if (drained && drained.score === j.enqueuedAt && now - drained.at < RECHECK_EMPTY_MS) continue;
          const n = this.#o.wants(j.stream);
          if (n > 0) wanted.push({ stream: j.stream, n, score: j.enqueuedAt });
        }
      } catch (err) {
        if (this.#stopped()) break;
        failures++;
        this.#o.log.warn({ err: errInfo(err), lane: this.#o.lane }, 'lane job list failed');
        await sleep(Math.min(100 * 2 ** Math.min(failures, 5), 2000), undefined, { signal: this.#stop.signal }).catch(
          () => {},
        );
        continue;
      }
      if (wanted.length === 0) {
        // No job on the lane: block until an enqueue wakes it. Jobs it cannot take more of now:
        // pause for wake() (a slot freed here) or the next look at the list.
        if (this.#jobs.length === 0 && this.#o.idleBlockMs > 0) await this.#idleWait();
        else await this.#pause(this.#o.discoverMs);
        continue;
      }
      // This read's turn: at most MAX_KEYS_PER_READ streams from the rotating start, and COUNT
      // (per stream) such that all of them together never bring back more than the room left.
      const keys = Math.max(1, Math.min(wanted.length, MAX_KEYS_PER_READ, room));
      // Block only when this read names every stream wanted: else an empty turn would hold up the
      // streams of the next one (the empty ones are left out after it, so the list shrinks).
      const blocking = wanted.length <= keys;
      const start = this.#turn % wanted.length;
      const named = [...wanted.slice(start), ...wanted.slice(0, start)].slice(0, keys);
      this.#turn = start + keys;
      wanted = named;
      const count = Math.max(1, Math.min(Math.floor(room / keys), Math.max(...wanted.map((w) => w.n))));
      const readAt = Date.now();
      let reply: ReadReply;
      try {
        const names = [...wanted.map((w) => w.stream), ...wanted.map(() => '>')];
        reply = (
          blocking
            ? await this.#reader!.xreadgroup(
                'GROUP',
                this.#group,
                this.#o.consumer,
                'COUNT',
                count,
                'BLOCK',
                this.#o.discoverMs,
                'STREAMS',
                ...names,
              )
            : await this.#reader!.xreadgroup(
                'GROUP',
                this.#group,
                this.#o.consumer,
                'COUNT',
                count,
                'STREAMS',
                ...names,
              )
        ) as ReadReply;
        failures = 0;
      } catch (err) {
        if (this.#stopped()) break;
        if (BENIGN_READ_ERROR.test((err as Error).message)) {
          // A stream dropped (drained) or lost its group (Redis flushed) since the list was read.
          await this.#ensureGroups(wanted.map((w) => w.stream));
          await this.#jobStreams(true).catch(() => {});
          continue;
        }
        failures++;
        this.#o.log.warn({ err: errInfo(err), lane: this.#o.lane }, 'lane stream read failed');
        await sleep(Math.min(100 * 2 ** Math.min(failures, 5), 2000), undefined, { signal: this.#stop.signal }).catch(
          () => {},
        );
        continue;
      }
      const got = new Map<string, number>();
      for (const [name, entries] of reply ?? []) {
        // The reply names the key with REDIS_KEY_PREFIX in front (which holds no braces).
        const stream = name.slice(name.indexOf('{'));
        got.set(stream, entries.length);
        for (const [id, fields] of entries) {
          if (fields) this.#dispatch(stream, id, fieldsToRecord(fields), 1, false);
        }
      }
      // A stream that gave fewer entries than COUNT had nothing more undelivered at the read.
      for (const w of wanted) {
        if ((got.get(w.stream) ?? 0) < count) this.#drained.set(w.stream, { score: w.score, at: readAt });
        else this.#drained.delete(w.stream);
      }
    }
  }

  /** Groups of existing streams that lost theirs; a missing stream is left alone (nothing to read). */
  async #ensureGroups(list: string[]): Promise<void> {
    const p = this.#o.redis.pipeline();
    for (const s of list) p.xgroup('CREATE', s, this.#group, '0');
    await p.exec().catch(() => {});
  }

  #dispatch(stream: string, id: string, fields: Record<string, string>, deliveries: number, dead: boolean): void {
    const key = `${stream} ${id}`;
    if (this.#inflight.has(key)) return;
    const abort = new AbortController();
    const d: LaneDelivery = { stream, id, fields, deliveries, signal: abort.signal };
    const promise = (async () => {
      try {
        const s = dead ? await this.#o.deadLetter(d) : await this.#o.handle(d);
        if (s.ack) await this.#ack(stream, id, s.with);
      } catch (err) {
        this.#o.log.error({ err: errInfo(err), stream, entry: id }, 'stream entry failed; left pending for redelivery');
      }
    })().finally(() => {
      this.#inflight.delete(key);
      this.wake();
    });
    this.#inflight.set(key, { stream, promise, abort });
  }

  async #ack(stream: string, id: string, also?: (tx: ChainableCommander) => void): Promise<void> {
    const tx = this.#o.redis.multi();
    also?.(tx);
    tx.xack(stream, this.#group, id);
    const results = await tx.exec();
    for (const [err] of results ?? []) if (err) throw err;
  }

  async #claimTick(): Promise<void> {
    const { redis, consumer } = this.#o;
    // Keep our own entries (running or waiting for their share) from looking idle.
    const mine = new Map<string, string[]>();
    for (const [key, f] of this.#inflight) {
      const list = mine.get(f.stream) ?? [];
      list.push(key.slice(f.stream.length + 1));
      mine.set(f.stream, list);
    }
    for (const [stream, ids] of mine)
      await (redis as Redis).xclaim(stream, this.#group, consumer, 0, ...ids, 'JUSTID').catch(() => {});
    for (const { stream } of await this.#jobStreams()) {
      if (this.#stopped()) return;
      const free = Math.min(this.#o.maxInFlight - this.#inflight.size, this.#o.wants(stream));
      if (free <= 0) continue;
      let reply: [string, Array<[string, string[] | null]>, string[]?];
      try {
        reply = (await redis.xautoclaim(stream, this.#group, consumer, this.#o.visibilityMs, '0-0', 'COUNT', free)) as [
          string,
          Array<[string, string[] | null]>,
          string[]?,
        ];
      } catch {
        continue; // dropped meanwhile
      }
      const live = reply[1].filter(([id, fields]) => fields !== null && !this.#inflight.has(`${stream} ${id}`));
      if (live.length === 0) continue;
      const counts = await this.#deliveryCounts(
        stream,
        live.map(([id]) => id),
      );
      for (const [id, fields] of live) {
        const n = counts.get(id);
        if (n === undefined) continue; // claimed away from us in between
        this.#dispatch(stream, id, fieldsToRecord(fields!), n, n > this.#o.maxDeliveries);
      }
    }
  }

  async #deliveryCounts(stream: string, ids: string[]): Promise<Map<string, number>> {
    const p = this.#o.redis.pipeline();
    for (const id of ids) p.xpending(stream, this.#group, id, id, 1, this.#o.consumer);
    const out = new Map<string, number>();
    for (const [err, rows] of (await p.exec()) ?? []) {
      if (err) throw err;
      for (const [id, , , n] of rows as Array<[string, string, number, number]>) out.set(id, Number(n));
    }
    return out;
  }

  async #dropTick(): Promise<void> {
    const now = Date.now();
    const set = queueKeys.laneJobs(this.#o.lane);
    let dropped = false;
    for (const j of await this.#jobStreams(true)) {
      if (this.#stopped()) return;
      if (now - j.enqueuedAt < this.#o.dropAfterMs) continue;
      if ((await (this.#o.redis as WithDrop).dropDrainedStream(j.stream, set, j.job)) === 1) dropped = true;
    }
    if (dropped) await this.#jobStreams(true);
  }
}
