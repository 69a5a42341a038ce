// Steps 4 and 8: the Idempotency-Key header, then the lease that makes exactly one execution of
// any number of identical requests, the replay of a committed reply, and the commit itself.
import type { RequestHandler, Response } from 'express';
import { ApiError } from '../contract/errors.ts';
import type { Db } from '../db/database.ts';
import { findCommitted, insertCommitted, type CommittedReply } from '../idempotency/idempotency-repo.ts';
import { isValidIdempotencyKey, requestFingerprint } from '../idempotency/fingerprint.ts';
import type { IdempotencyLeases } from '../idempotency/lease.ts';
import type { StoredReply } from '../ratelimit/limiter.ts';
import { admissionOutcomes, idempotencyEvents } from '../metrics.ts';
import { state, type RequestState } from './context.ts';

export const requireIdempotencyKey: RequestHandler = (req, res, next) => {
  const key = req.get('idempotency-key');
  if (!isValidIdempotencyKey(key)) throw new ApiError('idempotency_key_required');
  state(res).idempotencyKey = key;
  next();
};

export function sendReplay(res: Response, reply: Pick<CommittedReply, 'status' | 'body'>): void {
  idempotencyEvents.inc({ event: 'replayed' });
  admissionOutcomes.inc({ code: 'replayed' });
  res.setHeader('Idempotent-Replayed', 'true');
  res.status(reply.status).type('application/json').send(reply.body);
}

export interface ClaimOptions {
  /**
   * Where committed replies of this route live. `mysql` (paid work, cancel): in the effect's own
   * transaction; a claim also reads MySQL when Redis has no marker (markers are lost with Redis
   * data), so a paid retry is replayed, not refused for credits. `redis` (zero-credit inline
   * lookups): in the marker itself; a replay costs the admission round trip only, and after a
   * Redis loss an identical retry runs again (harmless: the reply is the only effect).
   */
  replies: 'mysql' | 'redis';
}

/**
 * Step 8. The admission script (step 3) already claimed the key's lease or found it taken; this
 * acts on what it found, in contract order, after the body, gates and product limit passed.
 */
export function claimIdempotency(db: Db, leases: IdempotencyLeases, opts: ClaimOptions = { replies: 'mysql' }): RequestHandler {
  return async (req, res, next) => {
    const s = state(res);
    const p = s.principal!;
    const key = s.idempotencyKey!;
    let found = s.lease;
    if (!found || found.state === 'none') {
      // Not claimed at step 3 (a route without the admission script): claim now.
      const fingerprint = requestFingerprint(req.method, req.path, s.rawBody);
      found = await claimAlone(leases, res, fingerprint);
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      if (found.state === 'claimed') {
        if (opts.replies === 'redis') {
          idempotencyEvents.inc({ event: 'claimed' });
          return next();
        }
        // No marker does not prove no commit (Redis may have lost it): one indexed read makes
        // sure a committed key is replayed or refused before anything executes.
        const committed = await findCommitted(db, p.keyId, key);
        if (committed) {
          await finishClaim(leases, res, true);
          if (committed.fingerprint.toString('hex') !== found.fingerprint) {
            idempotencyEvents.inc({ event: 'conflict' });
            throw new ApiError('idempotency_key_conflict');
          }
          return sendReplay(res, committed);
        }
        idempotencyEvents.inc({ event: 'claimed' });
        return next();
      }
      if (!found.sameFingerprint) {
        idempotencyEvents.inc({ event: 'conflict' });
        throw new ApiError('idempotency_key_conflict');
      }
      if (found.state === 'in_progress') {
        idempotencyEvents.inc({ event: 'in_progress' });
        throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
      }
      if (found.reply) return sendReplay(res, found.reply);
      // A marker without the reply: the reply is in MySQL (paid work, cancel, or an inline reply
      // committed before replies moved to Redis).
      const committed = await findCommitted(db, p.keyId, key);
      if (committed) return sendReplay(res, committed);
      // The marker outlived its record (retention): forget it and claim afresh.
      await leases.forget(p.applicationId, p.keyId, key);
      found = await claimAlone(leases, res, found.fingerprint);
    }
    throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
  };
}

async function claimAlone(leases: IdempotencyLeases, res: Response, fingerprint: string): Promise<NonNullable<RequestState['lease']>> {
  const s = state(res);
  const p = s.principal!;
  const got = await leases.claim(p.applicationId, p.keyId, s.idempotencyKey!, fingerprint);
  if (got.state === 'claimed') {
    s.claim = { applicationId: p.applicationId, apiKeyId: p.keyId, key: s.idempotencyKey!, fingerprint, token: got.token };
    return { state: 'claimed', sameFingerprint: true, fingerprint };
  }
  return { state: got.state, sameFingerprint: got.sameFingerprint, fingerprint, ...(got.reply ? { reply: got.reply } : {}) };
}

/**
 * After a request lost the race to commit (its insert met the unique key): answer with the
 * reply that was committed, or a conflict when that reply belongs to another request.
 */
export async function answerCommittedElsewhere(db: Db, res: Response): Promise<void> {
  const claim = state(res).claim!;
  const committed = await findCommitted(db, claim.apiKeyId, claim.key);
  if (!committed) throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
  if (committed.fingerprint.toString('hex') !== claim.fingerprint) throw new ApiError('idempotency_key_conflict');
  sendReplay(res, committed);
}

/**
 * Stores a reply for replay, then sends it. `redis`: in the lease's done marker, by the same
 * script that ends the lease (zero-credit lookups: one round trip); `mysql`: a committed row
 * (the cancel route), then the marker.
 */
export async function commitReply(db: Db, leases: IdempotencyLeases, ttlHours: number, res: Response, status: number, body: unknown, where: 'mysql' | 'redis' = 'mysql'): Promise<void> {
  const s = state(res);
  const text = JSON.stringify(body);
  const claim = s.claim;
  if (claim && where === 'redis') {
    await finishClaim(leases, res, true, { status, body: text });
  } else if (claim) {
    const stored = await insertCommitted(db, {
      apiKeyId: claim.apiKeyId, key: claim.key, fingerprint: Buffer.from(claim.fingerprint, 'hex'), status, body: text, ttlHours,
    });
    if (stored === 'duplicate') {
      await answerCommittedElsewhere(db, res);
      await finishClaim(leases, res, true);
      return;
    }
    await finishClaim(leases, res, true);
  }
  admissionOutcomes.inc({ code: 'ok' });
  res.status(status).type('application/json').send(text);
}

/** Ends this request's lease: with the committed marker, or released (a failure stores nothing). */
export async function finishClaim(leases: IdempotencyLeases, res: Response, committed: boolean, reply?: StoredReply): Promise<void> {
  const s = state(res);
  const claim = s.claim;
  if (!claim) return;
  s.claim = undefined;
  try {
    const held = await leases.finish(claim, committed, reply);
    if (!committed) idempotencyEvents.inc({ event: 'released' });
    if (!held) s.log.warn('idempotency lease had expired before the request finished');
  } catch (err) {
    // The lease expires on its own (IDEMPOTENCY_LOCK_MS); a committed reply is in MySQL anyway.
    s.log.warn({ err: { message: (err as Error).message } }, 'could not end idempotency lease');
  }
}
