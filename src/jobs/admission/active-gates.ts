// Step 6: active-work gates in CONTRACT §2 order. Passive work passes untouched; scans of every
// profile need responsible-use acceptance (the scan product declares it in its activeWork).
import { ApiError } from '../../contract/errors.ts';
import type { Principal } from '../../auth/principal.ts';
import type { ActiveWork } from '../../products/kit/product-contract.ts';
// One rule for the admission gate and for the scan planner's active work.
import { inApprovedScope } from '../../products/scan/rules/names.ts';

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
