// lookup.web.v1: web and TLS posture of a URL. Runs as a job on the `web` worker lane: the http
// check (required: both request chains, headers, cookies, CORS, score), the tls check and, for
// authorized requests only, the tls_protocols check. Price 4 = http 2 + tls 2; +4 for
// tls_protocols when authorized. A lane that ends unavailable/timeout/skipped is not captured.
import { createHash } from 'node:crypto';
import { webChangeRules } from './changes.ts';
import { isIP } from 'node:net';
import type { AsyncProduct, PlanContext, ProductDefinition, ProductRuntime } from '../kit/product-contract.ts';
import type { LaneReadiness } from '../../contract/lanes.ts';
import type { TaskPlan } from '../../contract/tasks.ts';
import { assembleWeb, webLanes } from './assemble.ts';
import { WEB_CHECKS } from './checks.ts';
import { isPassivePort } from './passive-ports.ts';
import { webInput, webResult, type WebInput, type WebResult } from './schema.ts';

export { createWebChecks, webChecks } from './checks.ts';
export { webFindings } from './findings.ts';
export { webInput, webResult } from './schema.ts';

export const WEB_DEADLINE_MS = 120_000;
export const WEB_UNIT_COSTS = { http: 2, tls: 2, tlsProtocols: 4 } as const;

/** The URL as the parser normalises it: the task key and the echo. */
export function normalisedUrl(i: WebInput): string {
  return new URL(i.url).href;
}

/** Task keys are at most 512 characters (the task table); a longer URL is keyed by its digest. */
export function urlTaskKey(url: string): string {
  return url.length <= 512 ? url : `sha256:${createHash('sha256').update(url).digest('hex')}`;
}

export function planWeb(input: WebInput, job?: PlanContext): TaskPlan[] {
  const url = normalisedUrl(input);
  // An authorized lookup's hops stay inside the scope it was admitted under (web/checks.ts).
  const scope = input.authorized && job?.activeScope ? { approvedScope: job.activeScope.domain } : {};
  const task = (check: string, spec: { lane: string; required: boolean }, unitCost: number): TaskPlan => ({
    check,
    lane: 'web',
    productLane: spec.lane,
    required: spec.required,
    unitCost,
    objectKey: urlTaskKey(url),
    distance: 0,
    // A passive lookup's redirects stay on the passive ports, an authorized one's in its scope (web/checks.ts).
    params: { url, authorized: input.authorized, ...scope },
  });
  const plans = [
    task(WEB_CHECKS.http, webLanes.http, WEB_UNIT_COSTS.http),
    task(WEB_CHECKS.tls, webLanes.tls, WEB_UNIT_COSTS.tls),
  ];
  if (input.authorized) plans.push(task(WEB_CHECKS.tlsProtocols, webLanes.tlsProtocols, WEB_UNIT_COSTS.tlsProtocols));
  return plans;
}

/** Every lane resolves its host with the project's resolver and connects through the guard. */
function outboundReadiness(runtime: ProductRuntime): LaneReadiness {
  if (!runtime.services.outbound) return 'unconfigured';
  return runtime.services.resolver?.readiness() ?? 'unconfigured';
}

const job: AsyncProduct<WebInput> = {
  workerLanes: ['web'],
  target: (i) => ({ type: 'url', value: normalisedUrl(i) }),
  plan: planWeb,
  assemble: (i, tasks) => assembleWeb(normalisedUrl(i), tasks),
  deadlineMs: WEB_DEADLINE_MS,
  changes: webChangeRules,
};

export const webProduct: ProductDefinition<WebInput, WebResult> = {
  id: 'lookup.web.v1',
  title: 'Web and TLS posture lookup',
  mode: 'async',
  method: 'POST',
  path: '/v2/lookups/web',
  scope: 'scan:create',
  rateClass: 'async_lookup',
  input: webInput,
  echo: (i) => ({ url: normalisedUrl(i), authorized: i.authorized }),
  resultSchema: webResult,
  lanes: [webLanes.http, webLanes.tls, webLanes.tlsProtocols],
  price: (i) => WEB_UNIT_COSTS.http + WEB_UNIT_COSTS.tls + (i.authorized ? WEB_UNIT_COSTS.tlsProtocols : 0),
  targetNames: (i) => {
    const host = new URL(i.url).hostname.replace(/^\[|\]$/g, '');
    return isIP(host) ? [] : [{ path: 'url', name: host }];
  },
  activeWork: (i) => {
    const u = new URL(i.url);
    return {
      active: i.authorized,
      // A port outside the web's own is active work: it needs the request's authorization.
      authorizationMissing: !i.authorized && !isPassivePort(u),
      targetHost: u.hostname.replace(/^\[|\]$/g, ''),
    };
  },
  readiness: (runtime) => {
    const r = outboundReadiness(runtime);
    return { http: r, tls: r, tls_protocols: r };
  },
  job,
};
