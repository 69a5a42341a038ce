// Step 6: active-work gates in CONTRACT §2 order. Passive work passes untouched; scans of every
// profile need responsible-use acceptance (the scan route adds that check itself).
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import type { Principal } from '../auth/principal.ts';
import type { ActiveWork } from '../products/kit/product-contract.ts';
import { state } from './context.ts';
// One rule for the admission gate and for the scan planner's active work.
import { inApprovedScope } from '../products/scan/rules/names.ts';

export function assertActiveAllowed(p: Principal, work: ActiveWork, currentPolicy: string): void {
  if (work.authorizationMissing) throw new ApiError('active_authorization_required');
  if ((work.active || work.requiresResponsibleUse) && p.responsibleUseVersion !== currentPolicy) {
    throw new ApiError('responsible_use_required', { details: { policyVersion: currentPolicy } });
  }
  if (!work.active) return;
  if (!p.activeCapability) throw new ApiError('active_permission_required');
  if (!work.targetHost || !inApprovedScope(work.targetHost, p.approvedScopes)) {
    throw new ApiError('approved_target_scope_required');
  }
}

export function activeGates(
  // biome-ignore lint/suspicious/noExplicitAny: any product's activeWork, whatever its input type
  activeWork: ((input: any) => ActiveWork) | undefined,
  currentPolicy: string,
): RequestHandler {
  return (_req, res, next) => {
    if (activeWork) {
      const s = state(res);
      assertActiveAllowed(s.principal!, activeWork(s.input), currentPolicy);
    }
    next();
  };
}
