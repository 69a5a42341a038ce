// The job's result envelope from the finished tasks (src/products/kit/lane-assembly.ts). tls_protocols
// is planned only for authorized requests; otherwise it is `skipped` / not_applicable.
import type { LaneSpec, SyncOutcome } from '../../contract/lanes.ts';
import type { TaskOutcomeView } from '../../contract/tasks.ts';
import { laneAssembly } from '../kit/lane-assembly.ts';
import type { WebResult } from './schema.ts';

export const webLanes = {
  http: {
    lane: 'http',
    required: true,
    description:
      'Both request chains (http:// and https://), redirects, security headers, cookies, CORS, Observatory-style score',
  },
  tls: {
    lane: 'tls',
    required: false,
    description: 'Certificate and chain trust, host name match, negotiated protocol and cipher, stapled OCSP',
  },
  tlsProtocols: {
    lane: 'tls_protocols',
    required: false,
    description: 'TLS 1.0-1.3 accepted per address (authorized requests only)',
  },
} satisfies Record<string, LaneSpec>;

export function assembleWeb(url: string, tasks: TaskOutcomeView[]): SyncOutcome<WebResult> {
  const a = laneAssembly(tasks);
  const http = a.part<Record<string, unknown>>(webLanes.http);
  const tls = a.part<Record<string, unknown>>(webLanes.tls);
  const tlsProtocols = a.part<Record<string, unknown>>(webLanes.tlsProtocols, {
    notPlanned: {
      reason: 'not_applicable',
      message: 'TLS protocol enumeration runs only for requests with authorized: true (active work).',
    },
  });
  return { result: { url, http, tls, tlsProtocols }, lanes: a.lanes, sources: a.sources, limitations: a.limitations };
}
