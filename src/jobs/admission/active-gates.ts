// Step 6: active-work gates in CONTRACT §2 order. The rules (the approved scope that covers the
// host, its proof of control, the order of the codes) are src/products/kit/active-admission.ts,
// which the active lane's re-check shares. Passive work passes untouched; scans of every profile
// need responsible-use acceptance (the scan product declares it in its activeWork).
import type { Principal } from '../../auth/principal.ts';
import type { ScopeProofs } from '../../auth/scope-proof.ts';
import type { ActiveWork } from '../../products/kit/product-contract.ts';
import { checkActiveWork, type ActiveGrant } from '../../products/kit/active-admission.ts';

/**
 * Throws the first failing gate's ApiError; returns the scope active work runs under (undefined
 * for passive work). A promise only when a verified scope's proof is asked of DNS.
 */
export function assertActiveAllowed(
  p: Principal,
  work: ActiveWork,
  currentPolicy: string,
  proofs: ScopeProofs | undefined,
): ActiveGrant | undefined | Promise<ActiveGrant> {
  return checkActiveWork(p, work, currentPolicy, proofs);
}
