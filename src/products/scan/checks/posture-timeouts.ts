// The scan's posture tasks' options and timeouts, apart from the tasks themselves
// (posture-checks.ts): the check list (./index.ts) needs the timeouts in every lane and in the
// orchestrator, the tasks' code only in the lane that runs them.
import { createDomainChecks } from '../../domain/checks.ts';
import { mailLaneChecks, type MailCheckOptions } from '../../mail/checks.ts';
import type { HttpCheckOptions } from '../../web/http-check.ts';

export interface PostureOptions {
  web?: Partial<HttpCheckOptions> & { handshakeTimeoutMs?: number };
  mail?: MailCheckOptions;
  rdapTimeoutMs?: number;
}

export function webPhases(o: PostureOptions['web'] = {}): HttpCheckOptions {
  const fetchTimeoutMs = o.fetchTimeoutMs ?? 12_000;
  return {
    fetchTimeoutMs,
    connectTimeoutMs: o.connectTimeoutMs ?? Math.min(5000, fetchTimeoutMs),
    headersTimeoutMs: o.headersTimeoutMs ?? Math.min(10_000, fetchTimeoutMs),
    bodyIdleTimeoutMs: o.bodyIdleTimeoutMs ?? Math.min(10_000, fetchTimeoutMs),
  };
}

/** Timeouts of the composite tasks: their parts run side by side. */
export function postureTimeouts(o: PostureOptions = {}) {
  const web = webPhases(o.web);
  const mail = mailLaneChecks(o.mail).timeoutMs;
  const domain = createDomainChecks({ rdapTimeoutMs: o.rdapTimeoutMs ?? 15_000 });
  return {
    web: 3 * web.fetchTimeoutMs + 2 * (o.web?.handshakeTimeoutMs ?? 8000) + 20_000,
    mail: Math.max(...Object.values(mail)) + 5_000,
    domain: Math.max(...domain.map((d) => d.timeoutMs)) + 5_000,
  };
}
