// The checks of scan.recursive.v1, by worker lane: dns (scan.dns, scan.wildcard), web, mail,
// domain, active. Each declares its lane and timeout; the lane runner does the rest.
import type { CheckSpec } from '../../kit/product-contract.ts';
import { SCAN_CHECKS } from '../rules/check-names.ts';
import { lazy } from '../../kit/lazy.ts';
import { postureTimeouts, type PostureOptions } from './posture-timeouts.ts';
import type { TcpProbeOptions } from './active-checks.ts';
import { scopeProofRefusal } from '../../kit/active-admission.ts';

// Loaded on first use (kit/lazy.ts): a lane loads only the checks it runs.
const runScanDnsCheck = lazy(() => import('./dns-check.ts').then((m) => m.runScanDnsCheck));
const runWildcardCheck = lazy(() => import('./wildcard-check.ts').then((m) => m.runWildcardCheck));
const runScanWebCheck = lazy(() => import('./posture-checks.ts').then((m) => m.runScanWebCheck));
const runScanMailCheck = lazy(() => import('./posture-checks.ts').then((m) => m.runScanMailCheck));
const runScanDomainCheck = lazy(() => import('./posture-checks.ts').then((m) => m.runScanDomainCheck));
const runTcpProbeCheck = lazy(() => import('./active-checks.ts').then((m) => m.runTcpProbeCheck));
const runAxfrCheck = lazy(() => import('./active-checks.ts').then((m) => m.runAxfrCheck));
const runWordlistCheck = lazy(() => import('./active-checks.ts').then((m) => m.runWordlistCheck));
const runWellKnownCheck = lazy(() => import('./active-checks.ts').then((m) => m.runWellKnownCheck));
const runScanTlsProtocolsCheck = lazy(() => import('./active-checks.ts').then((m) => m.runScanTlsProtocolsCheck));

export interface ScanCheckOptions extends PostureOptions {
  tcp?: TcpProbeOptions;
  /** Zone transfer, well-known fetches and TLS handshakes: one deadline each (tests shorten them). */
  activeTimeoutMs?: number;
}

/**
 * An active check behind its scope's proof: a verified scope whose TXT record no longer holds the
 * workspace's token (or cannot be asked) stops the task before it sends anything.
 */
function proven(spec: CheckSpec): CheckSpec {
  return {
    ...spec,
    run: async (task, ctx) => (await scopeProofRefusal(task, ctx)) ?? spec.run(task, ctx),
  };
}

export function createScanChecks(o: ScanCheckOptions = {}): CheckSpec[] {
  const t = postureTimeouts(o);
  const activeMs = o.activeTimeoutMs ?? 10_000;
  return scanCheckList(o, t, activeMs).map((c) => (c.lane === 'active' ? proven(c) : c));
}

function scanCheckList(o: ScanCheckOptions, t: ReturnType<typeof postureTimeouts>, activeMs: number): CheckSpec[] {
  return [
    // Up to 8 types + 14 SRV names, in two waves of DNS_TIMEOUT_MS (2 s by default).
    { name: SCAN_CHECKS.dns, lane: 'dns', timeoutMs: 20_000, run: (task, ctx) => runScanDnsCheck(task, ctx) },
    { name: SCAN_CHECKS.wildcard, lane: 'dns', timeoutMs: 15_000, run: (task, ctx) => runWildcardCheck(task, ctx) },
    { name: SCAN_CHECKS.web, lane: 'web', timeoutMs: t.web, run: (task, ctx) => runScanWebCheck(task, ctx, o) },
    { name: SCAN_CHECKS.mail, lane: 'mail', timeoutMs: t.mail, run: (task, ctx) => runScanMailCheck(task, ctx, o) },
    {
      name: SCAN_CHECKS.domain,
      lane: 'domain',
      timeoutMs: t.domain,
      run: (task, ctx) => runScanDomainCheck(task, ctx, o),
    },
    // 28 ports, 8 at a time, 2 s each at worst.
    {
      name: SCAN_CHECKS.tcpProbe,
      lane: 'active',
      timeoutMs: 30_000,
      run: (task, ctx) => runTcpProbeCheck(task, ctx, o.tcp),
    },
    {
      name: SCAN_CHECKS.axfr,
      lane: 'active',
      timeoutMs: 4 * activeMs + 10_000,
      run: (task, ctx) => runAxfrCheck(task, ctx, { timeoutMs: activeMs }),
    },
    { name: SCAN_CHECKS.wordlist, lane: 'active', timeoutMs: 20_000, run: (task, ctx) => runWordlistCheck(task, ctx) },
    {
      name: SCAN_CHECKS.wellKnown,
      lane: 'active',
      timeoutMs: activeMs + 10_000,
      run: (task, ctx) => runWellKnownCheck(task, ctx, { timeoutMs: activeMs }),
    },
    {
      name: SCAN_CHECKS.tlsProtocols,
      lane: 'active',
      timeoutMs: activeMs + 10_000,
      run: (task, ctx) => runScanTlsProtocolsCheck(task, ctx, { handshakeTimeoutMs: activeMs }),
    },
  ];
}

export const scanChecks: CheckSpec[] = createScanChecks();
