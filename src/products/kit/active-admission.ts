// Step 6 of admission, the active-work gates in CONTRACT §2 order, with no transport in it: the
// Express chain (src/http/active-gates.ts) and any other admission path call checkActiveWork. And
// the same proof rule where active work runs: scopeProofRefusal, in the lane, before an active
// task sends anything.
//
// The approved scope that holds active work on a host is the widest approved scope covering it
// (coveringScope, src/auth/approved-scopes.ts; the scan planner uses the same one). A scope
// approved by an operator without proof (`operator_override`) holds as it is. A `verified` scope
// holds while the TXT record _lss-challenge.<scope> still has the workspace's token, asked through
// the project's resolver (src/auth/scope-proof.ts, a found token trusted for at most
// SCOPE_PROOF_CACHE_SECONDS):
//   gone           403 approved_target_scope_required, details.reason proof_missing (no retry:
//                  the domain's owner must publish it again, or the operator approve anew)
//   indeterminate  503 service_unavailable, details.reason proof_indeterminate, Retry-After 30:
//                  the resolver could not say; never read as proof, never as its absence
import { ApiError } from '../../contract/errors.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import type { Principal } from '../../auth/principal.ts';
import { coveringScope, type ApprovedScope, type ScopeProof } from '../../auth/approved-scopes.ts';
import { challengeName, type ScopeProofs } from '../../auth/scope-proof.ts';
import { notRun } from './dns-replies.ts';
import type { ActiveWork, CheckContext } from './product-contract.ts';

/** When a resolver outage leaves a proof unknown: ask again after this. */
export const PROOF_RETRY_AFTER_SECONDS = 30;

/** What an admitted active request runs under: kept with its job (coverage.activeScope). */
export interface ActiveGrant {
  domain: string;
  proof: ScopeProof;
}

/**
 * Throws the first failing gate's ApiError; returns the scope active work runs under (undefined
 * for passive work). Synchronous unless a verified scope's proof must be asked (a promise then):
 * the admission chain's common case, passive work, makes no promise.
 */
export function checkActiveWork(
  p: Principal,
  work: ActiveWork,
  currentPolicy: string,
  proofs: ScopeProofs | undefined,
): ActiveGrant | undefined | Promise<ActiveGrant> {
  if (work.authorizationMissing) throw new ApiError('active_authorization_required');
  if ((work.active || work.requiresResponsibleUse) && p.responsibleUseVersion !== currentPolicy) {
    throw new ApiError('responsible_use_required', { details: { policyVersion: currentPolicy } });
  }
  if (!work.active) return undefined;
  if (!p.activeCapability) throw new ApiError('active_permission_required');
  const scope = work.targetHost ? coveringScope(work.targetHost, p.approvedScopes) : null;
  if (!scope) throw new ApiError('approved_target_scope_required');
  if (scope.proof === 'operator_override') return { domain: scope.domain, proof: scope.proof };
  return provenScope(scope, proofs);
}

async function provenScope(scope: ApprovedScope, proofs: ScopeProofs | undefined): Promise<ActiveGrant> {
  const record = challengeName(scope.domain);
  if (scope.token === null)
    throw new ApiError('approved_target_scope_required', {
      message: `The approved scope ${scope.domain} is marked verified but has no challenge token on record.`,
      details: { reason: 'proof_missing', scope: scope.domain, record },
    });
  const check = proofs ? await proofs.check(scope.domain, scope.token) : null;
  if (check?.state === 'present') return { domain: scope.domain, proof: scope.proof };
  if (check === null || check.state === 'indeterminate') {
    throw new ApiError('service_unavailable', {
      message: `Proof of control of the approved scope could not be checked (TXT ${record}); retry later.`,
      retryAfterSeconds: PROOF_RETRY_AFTER_SECONDS,
      details: { reason: 'proof_indeterminate' },
      cause: check ? check.detail : 'no resolver in this process to check a verified scope',
    });
  }
  throw new ApiError('approved_target_scope_required', {
    message: `The approved scope ${scope.domain} was verified by a TXT record at ${record} that no longer holds this workspace's token.`,
    details: { reason: 'proof_missing', scope: scope.domain, record },
  });
}

/**
 * In the lane, before an active task sends anything: its scope's proof, asked again (cached as
 * at admission). Null when the task may run: an operator's approval, a verified scope whose
 * record still holds the token, or a task planned without a proof (before issue 30).
 */
export async function scopeProofRefusal(
  task: { objectKey: string; params: Record<string, unknown> },
  ctx: CheckContext,
): Promise<CheckOutput | null> {
  if (task.params.scopeProof !== 'verified') return null;
  const scope = String(task.params.approvedScope ?? '');
  const token = typeof task.params.proofToken === 'string' ? task.params.proofToken : null;
  const proofs = ctx.runtime.services.scopeProofs;
  const record = challengeName(scope);
  if (token === null)
    return notRun(
      'unavailable',
      'proof_missing',
      [
        {
          code: 'proof_missing',
          message: `${scope} is verified but no token is on record: nothing was sent to ${task.objectKey}.`,
        },
      ],
      [],
    );
  if (!proofs)
    return notRun(
      'unavailable',
      'proof_indeterminate',
      [
        {
          code: 'proof_indeterminate',
          message: `No resolver here to ask ${record}: nothing was sent to ${task.objectKey}.`,
        },
      ],
      [],
    );
  const check = await proofs.check(scope, token);
  if (check.state === 'present') return null;
  if (check.state === 'missing')
    return notRun(
      'unavailable',
      'proof_missing',
      [
        {
          code: 'proof_missing',
          message: `Proof of control of ${scope} is gone (${check.detail}): active work on it stopped; nothing was sent to ${task.objectKey}.`,
        },
      ],
      [],
    );
  return notRun(
    'unavailable',
    'proof_indeterminate',
    [
      {
        code: 'proof_indeterminate',
        message: `Proof of control of ${scope} could not be checked (${check.detail}): nothing was sent to ${task.objectKey}; unknown, not refused.`,
      },
    ],
    [],
  );
}
