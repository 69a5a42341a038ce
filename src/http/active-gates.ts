// Step 6: active-work gates in CONTRACT §2 order. The rules live below the HTTP layer
// (src/products/kit/active-admission.ts: the approved scope, its proof of control, the order of
// the codes), so any admission path applies the same; this only mounts them in the chain.
// Passive work passes untouched; scans of every profile need responsible-use acceptance (the scan
// route adds that check itself).
import type { RequestHandler } from 'express';
import type { Principal } from '../auth/principal.ts';
import type { ScopeProofs } from '../auth/scope-proof.ts';
import type { ActiveWork } from '../products/kit/product-contract.ts';
import { checkActiveWork, type ActiveGrant } from '../products/kit/active-admission.ts';
import { state } from './context.ts';

export function assertActiveAllowed(
  p: Principal,
  work: ActiveWork,
  currentPolicy: string,
  proofs: ScopeProofs | undefined,
): ActiveGrant | undefined | Promise<ActiveGrant> {
  return checkActiveWork(p, work, currentPolicy, proofs);
}

export function activeGates(
  // biome-ignore lint/suspicious/noExplicitAny: any product's activeWork, whatever its input type
  activeWork: ((input: any) => ActiveWork) | undefined,
  currentPolicy: string,
  proofs: ScopeProofs | undefined,
): RequestHandler {
  return (_req, res, next) => {
    if (!activeWork) return next();
    const s = state(res);
    const grant = assertActiveAllowed(s.principal!, activeWork(s.input), currentPolicy, proofs);
    // A verified scope's proof is asked of DNS (or found in the cache) only for active work.
    if (grant instanceof Promise)
      return grant.then((g) => {
        s.activeGrant = g;
        next();
      });
    s.activeGrant = grant;
    next();
  };
}
