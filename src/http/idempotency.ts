// Steps 4 and 8: the Idempotency-Key header, then the claim that makes exactly one execution of
// any number of identical requests, and the replay of a committed reply.
import type { RequestHandler, Response } from 'express';
import { ApiError } from '../contract/errors.ts';
import type { Db } from '../db/database.ts';
import { claimIdempotencyKey, completeIdempotencyKey } from '../db/idempotency-repo.ts';
import { isValidIdempotencyKey, requestFingerprint } from '../idempotency/fingerprint.ts';
import { admissionOutcomes, idempotencyEvents } from '../metrics.ts';
import { state } from './context.ts';

export const requireIdempotencyKey: RequestHandler = (req, res, next) => {
  const key = req.get('idempotency-key');
  if (!isValidIdempotencyKey(key)) throw new ApiError('idempotency_key_required');
  state(res).idempotencyKey = key;
  next();
};

export interface IdempotencyOptions {
  leaseMs: number;
  ttlHours: number;
}

export function claimIdempotency(db: Db, opts: IdempotencyOptions): RequestHandler {
  return async (req, res, next) => {
    const s = state(res);
    const result = await claimIdempotencyKey(db, {
      apiKeyId: s.principal!.keyId,
      key: s.idempotencyKey!,
      fingerprint: requestFingerprint(req.method, req.path, s.rawBody),
      leaseMs: opts.leaseMs,
      ttlHours: opts.ttlHours,
    });
    switch (result.kind) {
      case 'claimed':
        idempotencyEvents.inc({ event: 'claimed' });
        s.claim = { id: result.id, token: result.token };
        return next();
      case 'replay':
        idempotencyEvents.inc({ event: 'replayed' });
        admissionOutcomes.inc({ code: 'replayed' });
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(result.status).type('application/json').send(result.body);
        return;
      case 'conflict':
        idempotencyEvents.inc({ event: 'conflict' });
        throw new ApiError('idempotency_key_conflict');
      case 'in_progress':
        idempotencyEvents.inc({ event: 'in_progress' });
        throw new ApiError('idempotency_request_in_progress', { retryAfterSeconds: 1 });
    }
  };
}

/** Stores the committed reply for replay, then sends it. */
export async function commitReply(db: Db, res: Response, status: number, body: unknown): Promise<void> {
  const s = state(res);
  const text = JSON.stringify(body);
  if (s.claim) {
    const claim = s.claim;
    const stored = await completeIdempotencyKey(db, claim.id, claim.token, status, text);
    s.claim = undefined;
    if (!stored) s.log.warn('idempotency lease was lost before completion');
  }
  admissionOutcomes.inc({ code: 'ok' });
  res.status(status).type('application/json').send(text);
}
