// Steps 4 and 8 of the admission chain over src/idempotency/: the Idempotency-Key (read once, at
// step 3, by the admission script's caller), then what its lease means for this request (execute
// once, replay, conflict, in progress), and the commit. The decisions live in
// src/idempotency/idempotency.ts; this file only moves them to and from Express.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../contract/errors.ts';
import { isValidIdempotencyKey, requestFingerprint } from '../idempotency/fingerprint.ts';
import type { Decision, Idempotency, ReplyStore } from '../idempotency/idempotency.ts';
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

/**
 * A JSON text as the reply, with the headers Express's res.send would set (Content-Type with its
 * charset, Content-Length) but without its checks for ETag, freshness and HEAD, which no POST of
 * this API needs.
 */
export function sendJsonText(res: Response, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function sendReplay(res: Response, reply: StoredReply): void {
  admissionOutcomes.inc({ code: 'replayed' });
  res.setHeader('Idempotent-Replayed', 'true');
  sendJsonText(res, reply.status, reply.body);
}

/** Step 8: execute (holding the claim), or answer with the replay; conflicts and waits throw. */
export function claimIdempotency(idempotency: Idempotency, store: ReplyStore): RequestHandler {
  const act = (res: Response, next: NextFunction, decision: Decision) => {
    if (decision.kind === 'replay') return sendReplay(res, decision.reply);
    state(res).claim = decision.claim;
    next();
  };
  return (req, res, next) => {
    const s = state(res);
    // The lease step 3 claimed passes to the decision, which hands it back only to execute.
    const held = s.claim;
    s.claim = undefined;
    // Mostly the admission script's answer settles it: no promise, no other round trip.
    const now = idempotency.decideAtOnce(s.lease, store, held);
    if (now) return act(res, next, now);
    const p = s.principal!;
    const fingerprint = s.lease?.fingerprint ?? requestFingerprint(req.method, req.path, s.rawBody);
    const who = { applicationId: p.applicationId, apiKeyId: p.keyId, key: s.idempotencyKey! };
    return idempotency.decide(who, fingerprint, s.lease, store, held).then((d) => act(res, next, d));
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
    if (store === 'redis') {
      // Write-behind: the reply leaves once the marker that stores it is on its way to Redis
      // (Idempotency.commitBehind says why a retry still finds it).
      admissionOutcomes.inc({ code: 'ok' });
      idempotency
        .commitBehind(claim, { status, body: text }, () => {
          try {
            sendJsonText(res, status, text);
          } catch (err) {
            s.log.error({ err }, 'could not send the reply');
          }
        })
        .then(
          (held) => {
            if (!held) s.log.warn('idempotency lease had expired before the request finished');
          },
          (err: unknown) => {
            s.log.warn({ err: { message: (err as Error).message } }, 'could not store the reply for replay');
          },
        );
      return;
    }
    const out = await idempotency.commit(claim, { status, body: text }, store);
    if (out.replayed) return sendReplay(res, out.reply);
  }
  admissionOutcomes.inc({ code: 'ok' });
  sendJsonText(res, status, text);
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
