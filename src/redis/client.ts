// One Redis client type for the whole service: a single node (REDIS_URL) or ioredis' Cluster client
// (REDIS_CLUSTER_NODES), both fail-fast: a command issued while Redis is down errors at once (the
// HTTP layer answers 503) instead of queueing until the client reconnects.
//
// On a cluster every key names its slot by a hash tag (src/queue/streams.ts, the limiter's
// per-application tag); every script, MULTI and explicit pipeline keeps its keys in one slot.
import type { Socket } from 'node:net';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { parseClusterNodes, type ClusterNodes } from '../config/redis-cluster-nodes.ts';
import { jittered } from '../resilience/breaker.ts';

/** What every module that talks to Redis accepts: the commands are the same on both. */
export type RedisClient = Redis | Cluster;

export type RedisTarget = { url: string } | { cluster: ClusterNodes };

/** REDIS_CLUSTER_NODES, when set, replaces REDIS_URL. */
export function redisTarget(config: {
  REDIS_URL?: string | undefined;
  REDIS_CLUSTER_NODES?: ClusterNodes | undefined;
}): RedisTarget {
  if (config.REDIS_CLUSTER_NODES && config.REDIS_CLUSTER_NODES.nodes.length > 0)
    return { cluster: config.REDIS_CLUSTER_NODES };
  if (!config.REDIS_URL) throw new Error('neither REDIS_CLUSTER_NODES nor REDIS_URL is set');
  return { url: config.REDIS_URL };
}

/** The target named by the environment as given (tests, benchmarks, tools): the same rule as config. */
export function redisTargetFromEnv(env: NodeJS.ProcessEnv = process.env): RedisTarget {
  const nodes = env.REDIS_CLUSTER_NODES ? parseClusterNodes(env.REDIS_CLUSTER_NODES) : null;
  if (env.REDIS_CLUSTER_NODES && !nodes)
    throw new Error(`REDIS_CLUSTER_NODES is not a list of host:port: ${env.REDIS_CLUSTER_NODES}`);
  return redisTarget({ REDIS_URL: env.REDIS_URL, REDIS_CLUSTER_NODES: nodes ?? undefined });
}

export interface RedisClientOptions {
  lazy?: boolean;
  /**
   * For request-serving clients, so that a Redis that accepts but never answers fails closed
   * instead of hanging requests. Not for clients (or their duplicates) that issue blocking reads.
   */
  commandTimeoutMs?: number;
  /**
   * Commands written in the same event-loop turn leave in one write: on a single node the socket
   * is corked at the first and uncorked at setImmediate (coalesceWrites below). Unlike ioredis'
   * auto-pipelining, nothing waits for an earlier batch's replies and no pipeline object holds
   * the commands. A cluster client has a connection per node, so there it means auto-pipelining
   * (one batch per node in flight at a time).
   */
  coalesceWrites?: boolean;
}

// Reconnection: 100 ms more per attempt up to 1 s, ±20 % so that every process of a deployment
// does not reconnect in step after a Redis restart; capped at 1 s so a client is back within about
// a second of Redis's return (issue 23's target is readiness within 2 s).
const retry = (times: number) => jittered(Math.min(100 * times, 1000));

/**
 * Scripts defined without a fixed key count (defineCommand without numberOfKeys) take the count as
 * their first argument. ioredis' cluster auto-pipelining routes a command by its first argument,
 * so it would file these under the wrong slot's batch and the batch would fail ("All keys in the
 * pipeline should belong to the same slots allocation group"). On a cluster they are sent on
 * their own: still one round trip each, only not batched with other requests' commands.
 */
const VARIADIC_SCRIPTS = ['consumeLimits', 'finishLease'];

export function createRedis(target: RedisTarget, keyPrefix: string, opts: RedisClientOptions = {}): RedisClient {
  const node: RedisOptions = {
    connectTimeout: 2000,
    maxRetriesPerRequest: 1,
    ...(opts.commandTimeoutMs ? { commandTimeout: opts.commandTimeoutMs } : {}),
  };
  if ('url' in target) {
    // A coalescing client times its commands out itself, with one timer (expireCommands below).
    const ownTimeout = opts.coalesceWrites ? opts.commandTimeoutMs : undefined;
    const client = new Redis(target.url, {
      ...node,
      ...(ownTimeout ? { commandTimeout: undefined } : {}),
      keyPrefix,
      lazyConnect: opts.lazy ?? false,
      enableOfflineQueue: false,
      retryStrategy: retry,
    });
    if (opts.coalesceWrites) coalesceWrites(client, ownTimeout);
    return recordReady(client);
  }
  const { nodes, username, password, tls } = target.cluster;
  const options: ClusterOptions = {
    keyPrefix,
    lazyConnect: opts.lazy ?? false,
    // Fail fast while the cluster (or a slot's master) is unreachable, as on a single node.
    enableOfflineQueue: false,
    clusterRetryStrategy: retry,
    // MOVED/ASK (resharding) and CLUSTERDOWN/TRYAGAIN (failover) are retried a few times, 100 ms
    // apart: a command never waits more than about a second on a cluster in trouble.
    maxRedirections: 8,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: 2000,
    ...(opts.coalesceWrites ? { enableAutoPipelining: true, autoPipeliningIgnoredCommands: VARIADIC_SCRIPTS } : {}),
    redisOptions: {
      ...node,
      ...(username ? { username } : {}),
      ...(password ? { password } : {}),
      ...(tls ? { tls: {} } : {}),
    },
  };
  return recordReady(
    new Cluster(
      nodes.map((n) => ({ host: n.host, port: n.port })),
      options,
    ),
  );
}

/**
 * Corks the connection's socket at the first command of an event-loop turn and uncorks it at
 * setImmediate, so that the commands of every request handled in that turn go out in one writev.
 * A socket write is the dearest part of a Redis round trip on these machines, which is why the
 * web role used ioredis' auto-pipelining; but ioredis sends one auto-pipeline at a time, so a
 * batch waits for the previous batch's replies, and its commands, held by pipeline objects, lived
 * long enough to be promoted out of V8's young generation (three times the full GCs, the latency
 * tail). Corking keeps the one write without either. Commands go into ioredis' reply queue as
 * before, in order; a socket that closes while corked fails them as any failed write does.
 */
function coalesceWrites(client: Redis, timeoutMs: number | undefined): void {
  const send = client.sendCommand.bind(client);
  const track = timeoutMs ? expireCommands(client, timeoutMs) : undefined;
  let corked: Socket | null = null;
  let after: Array<() => void> = [];
  const flush = () => {
    const socket = corked;
    corked = null;
    socket?.uncork();
    const run = after;
    after = [];
    for (const fn of run) {
      // One callback's failure must not keep the others from running: reported, not thrown.
      try {
        fn();
      } catch (err) {
        client.emit('error', err);
      }
    }
  };
  waitingForWrite.set(client, (fn) => {
    if (corked) after.push(fn);
    else fn();
  });
  client.sendCommand = ((
    command: Parameters<Redis['sendCommand']>[0],
    stream?: Parameters<Redis['sendCommand']>[1],
  ) => {
    const socket = (client as unknown as { stream?: Socket }).stream;
    if (!stream && !corked && socket && client.status === 'ready' && socket.writable) {
      socket.cork();
      corked = socket;
      setImmediate(flush);
    }
    track?.(command);
    return send(command, stream);
  }) as Redis['sendCommand'];
}

type TimedCommand = Parameters<Redis['sendCommand']>[0] & { isSettled?: boolean; lssSentAt?: number };

/**
 * commandTimeout without a timer per command: ioredis arms and clears a setTimeout for every
 * command (and `delete`s the timer's property, which turns each command object into a slow
 * dictionary), a measurable share of an admitted request. Here each command carries the time it
 * was sent, and one interval of a quarter of the timeout walks ioredis' own queue of commands
 * awaiting a reply, oldest first (replies come in order, and every command has the same timeout):
 * those past the timeout are failed with ioredis' own error ("Command timed out", which the HTTP
 * layer answers 503), between 1 and 1.25 timeouts after they were sent. Nothing is kept beyond
 * what ioredis keeps (a list of our own held commands long enough to reach the old generation),
 * and the interval runs only while commands are out.
 */
function expireCommands(client: Redis, timeoutMs: number): (command: TimedCommand) => void {
  // Read at every sweep: ioredis replaces the queue when the connection is reset.
  type Queue = { length: number; peekAt(i: number): { command: TimedCommand } | undefined };
  const pending = () => (client as unknown as { commandQueue: Queue }).commandQueue;
  let timer: NodeJS.Timeout | undefined;
  const sweep = () => {
    const expired = performance.now() - timeoutMs;
    const queue = pending();
    for (let i = 0; i < queue.length; i++) {
      const command = queue.peekAt(i)?.command;
      if (!command) break;
      // A command that did not pass through the wrapper has no time: not ours to judge.
      if (command.lssSentAt === undefined) continue;
      if (command.lssSentAt > expired) break;
      if (!command.isSettled) command.reject(new Error('Command timed out'));
    }
    if (pending().length === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  client.on('end', () => {
    clearInterval(timer);
    timer = undefined;
  });
  return (command) => {
    command.lssSentAt = performance.now();
    timer ??= setInterval(sweep, Math.max(10, timeoutMs / 4)).unref();
  };
}

const waitingForWrite = new WeakMap<RedisClient, (fn: () => void) => void>();

/**
 * Runs `fn` once the commands issued so far have been handed to the socket: at once, unless this
 * turn's writes are being coalesced (then right after they leave, at setImmediate). A reply that
 * depends on a command having reached Redis before the client can act on it (a write-behind
 * idempotency marker) is sent from here: any later command, from any connection, arrives after it.
 * `fn` should not throw; if it does, the error is emitted as the client's 'error'.
 */
export function afterWrite(client: RedisClient, fn: () => void): void {
  const wait = waitingForWrite.get(client);
  if (wait) wait(fn);
  else fn();
}

/**
 * A second client with the same target and options: a blocking read (XREADGROUP BLOCK) needs a
 * connection of its own. On a cluster that is a second Cluster client (one connection per master).
 */
export function duplicateRedis(client: RedisClient): RedisClient {
  return client instanceof Cluster ? client.duplicate() : client.duplicate();
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/** Resolves once the client is ready, or rejects after timeoutMs. */
export function redisReady(redis: RedisClient, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error('Redis did not become ready in time'));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
    if (redis.status === 'wait') redis.connect().catch(() => {});
  });
}

/** Clients of createRedis that have been ready at least once. */
const everReady = new WeakSet<RedisClient>();

function recordReady(client: RedisClient): RedisClient {
  client.once('ready', () => everReady.add(client));
  return client;
}

/**
 * Resolves once a client that is still making its first connection (a process just started) is
 * ready, or at once when it is not making one: ready already, or ready before (a lost connection
 * is an outage, the caller's command fails fast as usual), or its first attempt failed. Never
 * rejects; after `timeoutMs` it resolves and the caller's command fails on its own.
 *
 * Until the first `ready`, commands fail at once ("Stream isn't writeable…", on a cluster "Cluster
 * isn't ready…" while it reads CLUSTER INFO after the slots), offline queue off: /readyz's ping
 * in that window read a healthy Redis as `down` (a cluster needs several round trips to be ready,
 * long enough under load for the first poll to land in them).
 */
export function firstConnection(client: RedisClient, timeoutMs: number): Promise<void> {
  const connecting = client.status === 'connecting' || client.status === 'connect';
  if (!connecting || everReady.has(client)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const e of ['ready', 'reconnecting', 'close', 'end'] as const) client.off(e, done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    for (const e of ['ready', 'reconnecting', 'close', 'end'] as const) client.once(e, done);
  });
}

/** quit(), or disconnect() when quitting fails (Redis already gone). */
export async function closeRedis(redis: RedisClient): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}
