// The lane checks of lookup.web.v1, all on the `web` worker lane. Each is a pure function of
// (target URL, context) — recursive scans run the same checks per discovered host. Timeouts are
// the sum of the phases a check may spend, so the lane runner's timeout only fires on a bug.
import type { CheckSpec } from '../kit/product-contract.ts';
import { lazy } from '../kit/lazy.ts';

// Loaded on first use (kit/lazy.ts): importing the check list costs no parser.
const runHttpCheck = lazy(() => import('./http-check.ts').then((m) => m.runHttpCheck));
const runTlsCheck = lazy(() => import('./tls-check.ts').then((m) => m.runTlsCheck));
const runTlsProtocolsCheck = lazy(() => import('./tls-protocols-check.ts').then((m) => m.runTlsProtocolsCheck));

export const WEB_CHECKS = {
  http: 'web.http',
  tls: 'web.tls',
  tlsProtocols: 'web.tls_protocols',
} as const;

export interface WebCheckOptions {
  /** Budget of one request chain (every hop) — default 12 s. Tests shorten it. */
  fetchTimeoutMs?: number;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyIdleTimeoutMs?: number;
  /** One TLS handshake — default 8 s. */
  handshakeTimeoutMs?: number;
  now?: () => Date;
}

/** The URL travels in params (task keys are capped at 512 characters); a bare key is the URL itself. */
const urlOf = (task: { objectKey: string; params: Record<string, unknown> }) =>
  typeof task.params.url === 'string' ? task.params.url : task.objectKey;

/**
 * The scope an authorized task's connections stay in: the approved scope the job was admitted
 * under, or (a task planned before it was recorded) the URL's own host and the names below it.
 */
function authorizedScope(task: { objectKey: string; params: Record<string, unknown> }): { authorizedScope?: string } {
  if (task.params.authorized !== true) return {};
  const scope = task.params.approvedScope;
  return { authorizedScope: typeof scope === 'string' ? scope : new URL(urlOf(task)).hostname };
}

export function createWebChecks(o: WebCheckOptions = {}): CheckSpec[] {
  const fetchTimeoutMs = o.fetchTimeoutMs ?? 12_000;
  const handshakeTimeoutMs = o.handshakeTimeoutMs ?? 8000;
  const phases = {
    fetchTimeoutMs,
    connectTimeoutMs: o.connectTimeoutMs ?? Math.min(5000, fetchTimeoutMs),
    headersTimeoutMs: o.headersTimeoutMs ?? Math.min(10_000, fetchTimeoutMs),
    bodyIdleTimeoutMs: o.bodyIdleTimeoutMs ?? Math.min(10_000, fetchTimeoutMs),
  };
  return [
    {
      name: WEB_CHECKS.http,
      lane: 'web',
      // Two chains in parallel (each possibly read twice, verified then not) + the preflight.
      timeoutMs: 3 * fetchTimeoutMs + 10_000,
      // A passive lookup (not authorized) stays on the guard's passive ports, redirects included;
      // an authorized one may use any port, on hosts inside its approved scope only.
      run: (task, ctx) => runHttpCheck(urlOf(task), ctx, { ...phases, ...authorizedScope(task) }),
    },
    {
      name: WEB_CHECKS.tls,
      lane: 'web',
      timeoutMs: 2 * handshakeTimeoutMs + 10_000, // a modern handshake, maybe a legacy one, DNS
      run: (task, ctx) =>
        runTlsCheck(urlOf(task), ctx, {
          handshakeTimeoutMs,
          active: task.params.authorized === true,
          ...(o.now ? { now: o.now } : {}),
        }),
    },
    {
      name: WEB_CHECKS.tlsProtocols,
      lane: 'web',
      timeoutMs: handshakeTimeoutMs + 10_000, // all versions and addresses in parallel
      run: (task, ctx) => runTlsProtocolsCheck(urlOf(task), ctx, { handshakeTimeoutMs }),
    },
  ];
}

export const webChecks: CheckSpec[] = createWebChecks();
