// Steps 4 and 8 for a route outside the product chain (cancel), over the same functions product
// admission uses (src/jobs/admission/idempotency-step.ts): the Idempotency-Key (read once, at
// step 3, by the admission script's caller), what its lease means for this request, the commit.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { isValidIdempotencyKey } from '../idempotency/fingerprint.ts';
import type { Decision, Idempotency, ReplyStore } from '../idempotency/idempotency.ts';
import * as step from '../jobs/admission/idempotency-step.ts';
import { state } from './context.ts';
import { expressPort } from './express-port.ts';

export { sendJsonText } from './express-port.ts';

/** The request's Idempotency-Key when it is well-formed (CONTRACT §4), else undefined. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.get('idempotency-key');
  return isValidIdempotencyKey(key) ? key : undefined;
}

/** Step 4: the key the admission step read must be there and well-formed. */
export const requireIdempotencyKey: RequestHandler = (req, res, next) => {
  const s = state(res);
  s.idempotencyKey ??= idempotencyKeyOf(req);
  step.requireIdempotencyKey(s);
  next();
};

/** Step 8: execute (holding the claim), or answer with the replay; conflicts and waits throw. */
export function claimIdempotency(idempotency: Idempotency, store: ReplyStore): RequestHandler {
  const act = (res: Response, next: NextFunction, decision: Decision) => {
    if (decision.kind === 'replay') return step.sendReplay(res, expressPort, decision.reply);
    next();
  };
  return (req, res, next) => {
    const d = step.decideIdempotency(idempotency, state(res), store, req.method, req.path);
    if (d instanceof Promise) return d.then((decision) => act(res, next, decision));
    return act(res, next, d);
  };
}

/** Keeps the reply for replay (where `store` says), ends the lease, and sends it. */
export function commitReply(
  idempotency: Idempotency,
  res: Response,
  status: number,
  body: unknown,
  store: ReplyStore,
): Promise<void> {
  return step.commitReply(idempotency, state(res), status, body, store, res, expressPort);
}

/** Ends this request's lease: with the committed marker, or released (a failure stores nothing). */
export function finishClaim(idempotency: Idempotency, res: Response, committed: boolean): Promise<void> {
  return step.endClaim(idempotency, state(res), committed);
}
