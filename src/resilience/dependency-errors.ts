// What an error from MySQL or Redis means for a reply: unreachable (503 service_unavailable, never
// a 500) and, for the log line of that 503, which dependency and why. At the bottom of the layers
// (beside the breaker) because admission (src/jobs/admission/) and the HTTP edge both ask.
/** "mysql: ER_LOCK_DEADLOCK", "redis: Connection is closed." — for the log line of a 503. */
export function dependencyCause(err: unknown): string {
  const e = err as { code?: string; errno?: number; sqlState?: string; name?: string; message?: string } | null;
  const mysql =
    e?.sqlState !== undefined ||
    /^(ER_|PROTOCOL_|POOL_)/.test(e?.code ?? '') ||
    /Pool is closed/.test(e?.message ?? '');
  const redis =
    !mysql &&
    (e?.name === 'MaxRetriesPerRequestError' ||
      /Connection is closed|Stream isn't writeable|redis/i.test(e?.message ?? '') ||
      REDIS_CLUSTER_DOWN.test(e?.message ?? ''));
  const which = mysql ? 'mysql' : redis ? 'redis' : 'dependency';
  return `${which}: ${e?.code ?? e?.name ?? 'error'}${e?.message ? ` (${e.message.slice(0, 160)})` : ''}`;
}

/**
 * MySQL had no connection for us: the server refused one (1040 too many connections; 1203/1226 the
 * account's max_user_connections) or none of our pool's came free within DATABASE_CONNECTION_WAIT_MS
 * (src/db/database.ts). Our shortage of a budget of our own, never a fact of a target or a request:
 * a request answers 503, a lane task is retried (src/net/local-failures.ts).
 */
export const CONNECTION_SHORTAGE_CODES: ReadonlySet<string> = new Set([
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_USER_LIMIT_REACHED',
  'POOL_WAIT_TIMEOUT',
]);

/** The shortage code of `err` (CONNECTION_SHORTAGE_CODES), or null. */
export function connectionShortage(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECTION_SHORTAGE_CODES.has(code) ? code : null;
}

const CONNECTION_CODES = new Set([
  ...CONNECTION_SHORTAGE_CODES,
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'PROTOCOL_CONNECTION_LOST',
  'ER_SERVER_SHUTDOWN',
  'ER_LOCK_WAIT_TIMEOUT',
  'POOL_CLOSED',
  'ER_ACCESS_DENIED_ERROR',
]);

/**
 * ioredis' Cluster client when no node (or not the slot's master) can take the command; a MOVED or
 * ASK reaches the caller when the node it redirects to is unreachable (a shard just lost).
 */
const REDIS_CLUSTER_DOWN =
  /^(?:MOVED|ASK|TRYAGAIN|CLUSTERDOWN) |Cluster isn't ready|None of startup nodes is available|Too many Cluster redirections|Cluster is ended/;

/** MySQL or Redis unreachable: the reply is 503 service_unavailable, never a 500. */
export function isDependencyDown(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string; fatal?: boolean };
  if (!e || typeof e !== 'object') return false;
  if (e.code && CONNECTION_CODES.has(e.code)) return true;
  if (e.fatal === true) return true;
  if (e.name === 'MaxRetriesPerRequestError') return true;
  return (
    typeof e.message === 'string' &&
    (/Connection is closed|Stream isn't writeable|connect ETIMEDOUT|Pool is closed|Command timed out/i.test(
      e.message,
    ) ||
      REDIS_CLUSTER_DOWN.test(e.message))
  );
}
