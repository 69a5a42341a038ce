// Idempotency in Redis: a lease per (API key, Idempotency-Key) so that concurrent identical
// requests execute once, and a marker once a reply is committed.
// - Paid work (a job): the reply is committed to MySQL in the job's transaction, whose unique key
//   guarantees a single committed effect even if Redis lost every lease; the marker only sends a
//   replay to that row.
// - Zero-credit inline lookups: the reply is the only effect and re-running one is harmless, so
//   the marker holds the reply itself (one round trip to commit, one to replay, no MySQL). After a
//   Redis data loss an identical retry simply runs again (docs/api.md).
import { hash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterWrite, type RedisClient } from '../redis/client.ts';
import { RateLimiter, type ScriptTail } from '../ratelimit/limiter.ts';
import { applicationTag } from '../redis/hash-tags.ts';
import { INLINE_REPLY_MAX_BYTES } from '../contract/envelope.ts';

const FINISH = readFileSync(new URL('./finish-lease.lua', import.meta.url), 'utf8');

// A lease token only has to be unique among the holders of one key: a random prefix per process
// and a counter make it so without a getrandom call per request.
const TOKEN_PREFIX = randomBytes(9).toString('base64url');
let tokenSeq = 0;

function nextToken(): string {
  tokenSeq = (tokenSeq + 1) % Number.MAX_SAFE_INTEGER;
  return `${TOKEN_PREFIX}${tokenSeq.toString(36)}`;
}

export type LeaseState =
  | { state: 'claimed'; token: string }
  | { state: 'done' | 'in_progress'; sameFingerprint: boolean; reply?: StoredReply };

/** The lease a request holds while it executes: released on failure, finished on commit. */
export interface IdempotencyClaim {
  applicationId: number;
  apiKeyId: number;
  key: string;
  /** hex SHA-256 of method, path and canonical body */
  fingerprint: string;
  /** Identifies this request's Redis lease. */
  token: string;
  /** The key's digest in its Redis names, when already worked out (the admission step's request). */
  keyHash?: string;
}

/** What the admission script found for a request's key. */
export interface LeaseFound {
  state: 'none' | 'claimed' | 'done' | 'in_progress';
  sameFingerprint: boolean;
  /** A committed reply stored in Redis (zero-credit lookups), for a 'done' key with this fingerprint. */
  reply?: StoredReply;
}

/** The lease to claim in the admission script's round trip, and how to read what it found. */
export interface LeaseRequest {
  tail: ScriptTail;
  fingerprint: string;
  token: string;
  /** The key's digest, for the claim to carry to finish() (one hash per request, not two). */
  keyHash: string;
}

export interface StoredReply {
  status: number;
  body: string;
}

/** "<status>\n<body>" as finish-lease.lua stores it. */
export function encodeReply(r: StoredReply): string {
  return `${r.status}\n${r.body}`;
}

export function decodeReply(s: string): StoredReply | undefined {
  const nl = s.indexOf('\n');
  const status = Number(s.slice(0, nl));
  return nl > 0 && Number.isInteger(status) ? { status, body: s.slice(nl + 1) } : undefined;
}

/** The admission script's tail output (consume-limits.lua: leaseState, sameFingerprint, reply). */
export function leaseFound(tail: [string, number, string]): LeaseFound {
  const reply = tail[2] ? decodeReply(tail[2]) : undefined;
  return { state: tail[0] as LeaseFound['state'], sameFingerprint: tail[1] === 1, ...(reply ? { reply } : {}) };
}

/** Hashed: the client's key may hold any visible characters and up to 255 of them. */
function hashKey(key: string): string {
  return hash('sha256', key, 'base64url');
}

type Script = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

export class IdempotencyLeases {
  readonly #redis: RedisClient;
  readonly #claimer: RateLimiter;
  readonly #leaseMs: number;
  readonly #markerMs: number;

  constructor(redis: RedisClient, opts: { leaseMs: number; ttlHours: number }) {
    this.#redis = redis;
    this.#claimer = new RateLimiter(redis);
    this.#leaseMs = opts.leaseMs;
    this.#markerMs = opts.ttlHours * 3_600_000;
    const r = redis as unknown as Record<string, unknown>;
    if (!r.finishLease) redis.defineCommand('finishLease', { lua: FINISH });
  }

  /**
   * Under the application's rate-limit hash tag: the lease is claimed by the same script that
   * consumes the request's limits (one round trip), and a script's keys must share a slot.
   */
  #keys(applicationId: number, apiKeyId: number, key: string, keyHash = hashKey(key)): [string, string] {
    const base = `${applicationTag(String(applicationId))}:idem:${apiKeyId}`;
    return [`${base}:lease:${keyHash}`, `${base}:done:${keyHash}`];
  }

  /** What the limiter's script needs to claim this request's lease. */
  request(applicationId: number, apiKeyId: number, key: string, fingerprint: string): LeaseRequest {
    const token = nextToken();
    const keyHash = hashKey(key);
    return {
      tail: { keys: this.#keys(applicationId, apiKeyId, key, keyHash), args: [fingerprint, token, this.#leaseMs] },
      fingerprint,
      token,
      keyHash,
    };
  }

  /** A claim on its own (after a stale marker was forgotten; tests of abandoned leases). */
  async claim(applicationId: number, apiKeyId: number, key: string, fingerprint: string): Promise<LeaseState> {
    // The same script that admits writes, with no policy to check: one place claims leases.
    const lease = this.request(applicationId, apiKeyId, key, fingerprint);
    const found = leaseFound((await this.#claimer.consume(String(applicationId), [], lease.tail)).tail!);
    if (found.state === 'claimed') return { state: 'claimed', token: lease.token };
    return {
      state: found.state as 'done' | 'in_progress',
      sameFingerprint: found.sameFingerprint,
      ...(found.reply ? { reply: found.reply } : {}),
    };
  }

  /**
   * committed: leave the marker that sends identical retries to the committed reply; with
   * `reply`, the marker stores that reply itself (zero-credit lookups, nothing in MySQL).
   */
  async finish(lease: IdempotencyClaim, committed: boolean, reply?: StoredReply): Promise<boolean> {
    const run = (this.#redis as unknown as { finishLease: Script }).finishLease.bind(this.#redis);
    const args: Array<string | number> = [lease.fingerprint, lease.token, committed ? this.#markerMs : 0];
    // "<status>\n" and the body: a body over INLINE_REPLY_MAX_BYTES is never kept.
    if (committed && reply) args.push(encodeReply(reply), INLINE_REPLY_MAX_BYTES + 4);
    const held = await run(2, ...this.#keys(lease.applicationId, lease.apiKeyId, lease.key, lease.keyHash), ...args);
    return Number(held) === 1;
  }

  /** Runs `send` once the commands issued so far are on their way to Redis (client.ts afterWrite). */
  afterWrite(send: () => void): void {
    afterWrite(this.#redis, send);
  }

  /** The reply a done marker stores (zero-credit lookups); null when there is none. */
  async storedReply(applicationId: number, apiKeyId: number, key: string): Promise<StoredReply | null> {
    const marker = await this.#redis.get(this.#keys(applicationId, apiKeyId, key)[1]);
    return marker && marker.length > 65 ? (decodeReply(marker.slice(65)) ?? null) : null;
  }

  /** A marker whose MySQL record is gone (expired or purged) must not keep answering "done". */
  async forget(applicationId: number, apiKeyId: number, key: string): Promise<void> {
    await this.#redis.del(this.#keys(applicationId, apiKeyId, key)[1]);
  }
}
