// One POST route per registered product. The route authenticates the Bearer key (step 1, with the
// scope of step 2) and reads the body; everything after that — rate limits, Idempotency-Key, body
// validation, active gates, product limit, idempotency state, readiness, credits and dispatch or
// the inline execution, in CONTRACT §2 order — is product admission
// (src/jobs/admission/admit-product.ts), the one copy the monitor scheduler also runs.
import type { Express, RequestHandler, Response } from 'express';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { idempotencyKeyOf } from '../http/idempotency.ts';
import { readBody } from '../http/body.ts';
import { state } from '../http/context.ts';
import { sequence } from '../http/sequence.ts';
import { expressPort } from '../http/express-port.ts';
import type { ProductDefinition } from '../products/kit/product-contract.ts';
import { ProductAdmission } from '../jobs/admission/admit-product.ts';

// The response's 'close' (not the request's, which has already ended once the body was read)
// tells that the client went away before the answer was written. One listener for every response.
function abortOnClose(this: Response): void {
  const running = state(this).execution;
  if (running && !this.writableFinished) running.abort(new Error('client closed'));
}

function admit(deps: AppDeps, def: ProductDefinition): RequestHandler {
  const admission = new ProductAdmission(deps, def, expressPort, { caller: 'request' });
  const inline = def.mode === 'sync';
  return (req, res) => {
    const s = state(res);
    s.idempotencyKey = idempotencyKeyOf(req);
    if (inline) res.on('close', abortOnClose);
    return admission.admit(s, req.path, res);
  };
}

export function mountProductRoutes(app: Express, deps: AppDeps): void {
  for (const def of deps.products) {
    app.post(def.path, sequence([authenticate(deps.auth, [def.scope]), readBody, admit(deps, def)]));
  }
}
