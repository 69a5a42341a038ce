// The lane checks of lookup.domain.v1, all on the `domain` worker lane. The lane runner supplies
// the task (objectKey = the normalised name) and the context; each check returns its part of the
// projection, its objects and findings, or a status that says why it has none.
import type { CheckSpec } from '../kit/product-contract.ts';
import { lazy } from '../kit/lazy.ts';
import type { RegistrationCheckOptions } from './registration-check.ts';

// Loaded on first use (kit/lazy.ts): importing the check list loads no check.
const runDelegationCheck = lazy(() => import('./delegation-check.ts').then((m) => m.runDelegationCheck));
const runRecordsCheck = lazy(() => import('./records-check.ts').then((m) => m.runRecordsCheck));
const runRegistrationCheck = lazy(() => import('./registration-check.ts').then((m) => m.runRegistrationCheck));

export const DOMAIN_CHECKS = {
  delegation: 'domain.delegation',
  registration: 'domain.registration',
  records: 'domain.records',
} as const;

export interface DomainCheckOptions {
  /** RDAP query budget (default 15 s); tests shorten it to see a timeout quickly. */
  rdapTimeoutMs?: number;
  now?: RegistrationCheckOptions['now'];
}

const nameOf = (task: { objectKey: string; target: string }) => task.objectKey || task.target;

export function createDomainChecks(opts: DomainCheckOptions = {}): CheckSpec[] {
  const rdapTimeoutMs = opts.rdapTimeoutMs ?? 15_000;
  return [
    {
      name: DOMAIN_CHECKS.delegation,
      lane: 'domain',
      // NS/SOA/DS in parallel, then the NS hosts' addresses in parallel: two resolver deadlines
      // (DNS_TIMEOUT_MS, default 2 s) plus slack. A check that overruns is `timeout` without output.
      timeoutMs: 30_000,
      run: (task, ctx) => runDelegationCheck(nameOf(task), ctx),
    },
    {
      name: DOMAIN_CHECKS.registration,
      lane: 'domain',
      timeoutMs: rdapTimeoutMs + 12_000, // the RDAP budget plus a first-use bootstrap fetch (10 s)
      run: (task, ctx) => runRegistrationCheck(nameOf(task), ctx, { rdapTimeoutMs, now: opts.now }),
    },
    {
      name: DOMAIN_CHECKS.records,
      lane: 'domain',
      timeoutMs: 20_000, // one wave of five parallel queries
      run: (task, ctx) => runRecordsCheck(nameOf(task), ctx),
    },
  ];
}

export const domainChecks: CheckSpec[] = createDomainChecks();
