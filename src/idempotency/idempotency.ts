// Idempotency in one place (CONTRACT §4). The admission script claimed the request's lease or found
// it taken (lease.ts); this decides what that means (execute, replay, conflict, in progress), keeps
// a committed reply where its route keeps replies, and ends the lease. The HTTP layer
// (src/http/idempotency.ts) reads the header, calls this once per step and sends what it says;
// nothing here knows Express.
import { ApiError } from '../contract/errors.ts';
import type { Db } from '../db/database.ts';
import { idempotencyEvents } from '../metrics.ts';
import { findCommitted, insertCommitted } from './idempotency-repo.ts';
import type { IdempotencyClaim, IdempotencyLeases, LeaseFound, StoredReply } from './lease.ts';

/**
 * Where committed replies of a route live. `mysql` (paid work, cancel): in the effect's own
 * transaction; a claim also reads MySQL when Redis has no marker (markers are lost with Redis
 * data), so a paid retry is replayed, not refused for credits. `redis` (zero-credit inline
 * lookups): in the marker itself; a replay costs the admission round trip only, and after a
 * Redis loss an identical retry runs again (harmless: the reply is the only effect).
 */
export type ReplyStore = 'mysql' | 'redis';

/** Who asks: the application, its key and the Idempotency-Key value. */
export interface IdempotencySubject {
  applicationId: number;
  apiKeyId: number;
  key: string;
}

export type Decision = { kind: 'execute'; claim?: IdempotencyClaim } | { kind: 'replay'; reply: StoredReply };

export class Idempotency {
  readonly leases: IdempotencyLeases;
  readonly #db: Db;
  readonly #ttlHours: number;

  constructor(db: Db, leases: IdempotencyLeases, ttlHours: number) {
    this.#db = db;
    this.leases = leases;
    this.#ttlHours = ttlHours;
  }

  /**
   * Step 8: acts, in contract order, on what the admission script found. `held` is the lease the
   * script claimed for this request, if it did; it passes to this call, which returns it with
   * `execute` (or a lease claimed here, when the script did not claim: a route without it) for the
   * caller to hold until it commits or fails, and otherwise ends it (committed where a reply exists,
   * released on an error).
   */
  async decide(
    who: IdempotencySubject,
    fingerprint: string,
    found: LeaseFound | undefined,
    store: ReplyStore,
    held?: IdempotencyClaim,
  ): Promise<Decision> {
    let claim = held;
    try {
      const decision = await this.#decide(
        who,
        fingerprint,
        found,
        store,
        (c) => (claim = c),
        () => claim,
      );
      if (decision.kind === 'execute') {
        const kept = claim;
        claim = undefined;
        return kept ? { kind: 'execute', claim: kept } : { kind: 'execute' };
      }
      return decision;
    } finally {
      // Not executing: a lease still held here was claimed for nothing and must not linger.
      if (claim) await this.finish(claim, false).catch(() => false);
    }
  }

  /**
   * Step 8 without a round trip, when what the admission script found settles it: this request's
   * own claim on a route whose replies live in Redis (execute), a stored reply (replay), another
   * request's lease (in progress) or another fingerprint (conflict). Undefined: decide() must look
   * further (MySQL, a marker without its reply, a route without the script's claim).
   */
  decideAtOnce(found: LeaseFound | undefined, store: ReplyStore, held?: IdempotencyClaim): Decision | undefined {
    if (!found) return undefined;
    if (found.state === 'claimed') {
      if (store === 'mysql' || !held) return undefined;
      idempotencyEvents.inc({ event: 'claimed' });
      return { kind: 'execute', claim: held };
    }
    // The script claims only when it answers 'claimed'; anything else here is decide()'s to end.
    if (found.state === 'none' || held) return undefined;
    if (!found.sameFingerprint) return conflict();
    if (found.state === 'in_progress') {
      idempotencyEvents.inc({ event: 'in_progress' });
      throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
    }
    return found.reply ? replay(found.reply) : undefined;
  }

  async #decide(
    who: IdempotencySubject,
    fingerprint: string,
    found: LeaseFound | undefined,
    store: ReplyStore,
    setClaim: (c: IdempotencyClaim | undefined) => void,
    heldClaim: () => IdempotencyClaim | undefined,
  ): Promise<Decision> {
    let seen = found && found.state !== 'none' ? found : undefined;
    if (!seen) seen = await this.#claimAlone(who, fingerprint, setClaim);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (seen.state === 'claimed') {
        if (store === 'mysql') {
          // No marker does not prove no commit (Redis may have lost it): one indexed read makes
          // sure a committed key is replayed or refused before anything executes.
          const committed = await findCommitted(this.#db, who.apiKeyId, who.key);
          if (committed) {
            const c = heldClaim();
            setClaim(undefined);
            if (c) await this.finish(c, true);
            if (committed.fingerprint.toString('hex') !== fingerprint) return conflict();
            return replay(committed);
          }
        }
        idempotencyEvents.inc({ event: 'claimed' });
        return { kind: 'execute' };
      }
      if (!seen.sameFingerprint) return conflict();
      if (seen.state === 'in_progress') {
        idempotencyEvents.inc({ event: 'in_progress' });
        throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
      }
      if (seen.reply) return replay(seen.reply);
      // A marker without the reply: the reply is in MySQL (paid work, cancel, or an inline reply
      // committed before replies moved to Redis).
      const committed = await findCommitted(this.#db, who.apiKeyId, who.key);
      if (committed) return replay(committed);
      // The marker outlived its record (retention): forget it and claim afresh.
      await this.leases.forget(who.applicationId, who.apiKeyId, who.key);
      seen = await this.#claimAlone(who, fingerprint, setClaim);
    }
    throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
  }

  async #claimAlone(
    who: IdempotencySubject,
    fingerprint: string,
    setClaim: (c: IdempotencyClaim) => void,
  ): Promise<LeaseFound> {
    const got = await this.leases.claim(who.applicationId, who.apiKeyId, who.key, fingerprint);
    if (got.state === 'claimed') {
      setClaim({ ...who, fingerprint, token: got.token });
      return { state: 'claimed', sameFingerprint: true };
    }
    return { state: got.state, sameFingerprint: got.sameFingerprint, ...(got.reply ? { reply: got.reply } : {}) };
  }

  /**
   * Keeps a reply for replay and ends the lease. `redis`: in the lease's done marker, by the same
   * script that ends it (zero-credit lookups: one round trip); `mysql`: a committed row (the
   * cancel route), then the marker. Returns the reply to send: this one, or the one another
   * request committed first for the key (`replayed`; a conflict when that one was for other input).
   */
  async commit(
    claim: IdempotencyClaim,
    reply: StoredReply,
    store: ReplyStore,
  ): Promise<{ reply: StoredReply; replayed: boolean }> {
    if (store === 'redis') {
      await this.finish(claim, true, reply);
      return { reply, replayed: false };
    }
    const stored = await insertCommitted(this.#db, {
      apiKeyId: claim.apiKeyId,
      key: claim.key,
      fingerprint: Buffer.from(claim.fingerprint, 'hex'),
      status: reply.status,
      body: reply.body,
      ttlHours: this.#ttlHours,
    });
    if (stored === 'duplicate') {
      try {
        return { reply: await this.committedElsewhere(claim), replayed: true };
      } finally {
        await this.finish(claim, true);
      }
    }
    await this.finish(claim, true);
    return { reply, replayed: false };
  }

  /**
   * Write-behind commit of a reply that lives in Redis (zero-credit inline lookups): the script
   * that ends the lease and stores the reply in its marker is issued now, and `send` runs as soon
   * as that command has been handed to Redis's socket, without waiting for Redis's answer (one
   * round trip less on every such request's latency). Whatever a client does after it has the
   * reply reaches Redis after the marker, from this process's connection or any other; a
   * duplicate that was already under way finds the lease and is answered in progress, as
   * CONTRACT §4 says for concurrent duplicates. Where the command has to be sent again (NOSCRIPT
   * after Redis lost its scripts, a cluster's MOVED, a cluster node's connection still opening),
   * a retry racing it can be answered in progress too (409, Retry-After: 1), never run twice. The promise says whether the lease was still held;
   * if the command fails, the lease expires on its own (IDEMPOTENCY_LOCK_MS) and an identical
   * retry after that runs again, which for a zero-credit lookup is harmless.
   */
  commitBehind(claim: IdempotencyClaim, reply: StoredReply, send: () => void): Promise<boolean> {
    const held = this.finish(claim, true, reply);
    this.leases.afterWrite(send);
    return held;
  }

  /**
   * After a request lost the race to commit (its insert met the unique key): the reply that was
   * committed, or a conflict when that reply belongs to another request.
   */
  async committedElsewhere(claim: IdempotencyClaim): Promise<StoredReply> {
    const committed = await findCommitted(this.#db, claim.apiKeyId, claim.key);
    if (!committed) throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
    if (committed.fingerprint.toString('hex') !== claim.fingerprint) return conflict();
    idempotencyEvents.inc({ event: 'replayed' });
    return committed;
  }

  /**
   * Ends a lease: with the committed marker (and `reply` stored in it), or released (a failure
   * stores nothing). False when the lease had already expired.
   */
  async finish(claim: IdempotencyClaim, committed: boolean, reply?: StoredReply): Promise<boolean> {
    const held = await this.leases.finish(claim, committed, reply);
    if (!committed) idempotencyEvents.inc({ event: 'released' });
    return held;
  }
}

function conflict(): never {
  idempotencyEvents.inc({ event: 'conflict' });
  throw new ApiError('idempotency_key_conflict');
}

function replay(reply: StoredReply): Decision {
  idempotencyEvents.inc({ event: 'replayed' });
  return { kind: 'replay', reply: { status: reply.status, body: reply.body } };
}
