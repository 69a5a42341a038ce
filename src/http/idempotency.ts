// Steps 4 and 8 of the admission chain over src/idempotency/: the Idempotency-Key (read once, at
// step 3, by the admission script's caller), then what its lease means for this request (execute
// once, replay, conflict, in progress), and the commit. The decisions live in
// src/idempotency/idempotency.ts; this file only moves them to and from Express.
import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../contract/errors.ts';
import { isValidIdempotencyKey, requestFingerprint } from '../idempotency/fingerprint.ts';
import type { Idempotency, ReplyStore } from '../idempotency/idempotency.ts';
import type { StoredReply } from '../idempotency/lease.ts';
import { admissionOutcomes } from '../metrics.ts';
import { state } from './context.ts';

/** The request's Idempotency-Key when it is well-formed (CONTRACT §4), else undefined. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.get('idempotency-key');
  return isValidIdempotencyKey(key) ? key : undefined;
}

/** Step 4: the key the admission step read must be there and well-formed. */
export const requireIdempotencyKey: RequestHandler = (req, res, next) => {
  const s = state(res);
  s.idempotencyKey ??= idempotencyKeyOf(req);
  if (!s.idempotencyKey) throw new ApiError('idempotency_key_required');
  next();
};

export function sendReplay(res: Response, reply: StoredReply): void {
  admissionOutcomes.inc({ code: 'replayed' });
  res.setHeader('Idempotent-Replayed', 'true');
  res.status(reply.status).type('application/json').send(reply.body);
}

/** Step 8: execute (holding the claim), or answer with the replay; conflicts and waits throw. */
export function claimIdempotency(idempotency: Idempotency, store: ReplyStore): RequestHandler {
  return async (req, res, next) => {
    const s = state(res);
    const p = s.principal!;
    const fingerprint = s.lease?.fingerprint ?? requestFingerprint(req.method, req.path, s.rawBody);
    const who = { applicationId: p.applicationId, apiKeyId: p.keyId, key: s.idempotencyKey! };
    // The lease step 3 claimed passes to decide(), which hands it back only to execute.
    const held = s.claim;
    s.claim = undefined;
    const decision = await idempotency.decide(who, fingerprint, s.lease, store, held);
    if (decision.kind === 'replay') return sendReplay(res, decision.reply);
    s.claim = decision.claim;
    next();
  };
}

/** Keeps the reply for replay (where `store` says), ends the lease, and sends it. */
export async function commitReply(
  idempotency: Idempotency,
  res: Response,
  status: number,
  body: unknown,
  store: ReplyStore,
): Promise<void> {
  const s = state(res);
  const claim = s.claim;
  const text = JSON.stringify(body);
  if (claim) {
    s.claim = undefined;
    const out = await idempotency.commit(claim, { status, body: text }, store);
    if (out.replayed) return sendReplay(res, out.reply);
  }
  admissionOutcomes.inc({ code: 'ok' });
  res.status(status).type('application/json').send(text);
}

/** After an async product's job transaction met the unique key: the reply committed first. */
export async function answerCommittedElsewhere(idempotency: Idempotency, res: Response): Promise<void> {
  const claim = state(res).claim!;
  try {
    sendReplay(res, await idempotency.committedElsewhere(claim));
  } finally {
    await finishClaim(idempotency, res, true);
  }
}

/** Ends this request's lease: with the committed marker, or released (a failure stores nothing). */
export async function finishClaim(idempotency: Idempotency, res: Response, committed: boolean): Promise<void> {
  const s = state(res);
  const claim = s.claim;
  if (!claim) return;
  s.claim = undefined;
  try {
    const held = await idempotency.finish(claim, committed);
    if (!held) s.log.warn('idempotency lease had expired before the request finished');
  } catch (err) {
    // The lease expires on its own (IDEMPOTENCY_LOCK_MS); a committed reply is in MySQL anyway.
    s.log.warn({ err: { message: (err as Error).message } }, 'could not end idempotency lease');
  }
}
