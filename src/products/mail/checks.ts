// The ten lane checks of lookup.mail.v1, all on the `mail` worker lane. Each is a function of
// (domain, context) returning a CheckOutput of CONTRACT §10 objects (domain, mx_host, ip_address,
// certificate, mail_posture, host, url), so a recursive scan can run any of them for any domain
// it discovers. Every check asks the DNS through its own DnsAsker (one question per name and
// type, answers kept for the pool).
import type { CheckContext, CheckSpec } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { notRun, resolverOf } from '../kit/dns-replies.ts';
import { lazy } from '../kit/lazy.ts';
import { DnsAsker } from './dns-snapshot.ts';
import { mailLanes, type MailLaneName } from './lanes.ts';
import { DEFAULT_SMTP_LIMITS, type SmtpLimits } from '../../smtp/smtp-session.ts';

// Loaded on first use (kit/lazy.ts): importing the check list loads neither mailauth nor SMTP.
const runBimiCheck = lazy(() => import('./bimi-check.ts').then((m) => m.runBimiCheck));
const runDaneCheck = lazy(() => import('./dane-check.ts').then((m) => m.runDaneCheck));
const runDkimCheck = lazy(() => import('./dkim-check.ts').then((m) => m.runDkimCheck));
const runDmarcCheck = lazy(() => import('./dmarc-check.ts').then((m) => m.runDmarcCheck));
const runMtaStsCheck = lazy(() => import('./mta-sts-check.ts').then((m) => m.runMtaStsCheck));
const runMxCheck = lazy(() => import('./mx-check.ts').then((m) => m.runMxCheck));
const runSmtpStarttlsCheck = lazy(() => import('./smtp-starttls-check.ts').then((m) => m.runSmtpStarttlsCheck));
const runSpfCheck = lazy(() => import('./spf-check.ts').then((m) => m.runSpfCheck));
const runTlsRptCheck = lazy(() => import('./tls-rpt-check.ts').then((m) => m.runTlsRptCheck));
const runZoneCheck = lazy(() => import('./zone-check.ts').then((m) => m.runZoneCheck));

export interface MailCheckOptions {
  /** SMTP per-phase deadlines and caps (tests shorten them to meet hostile peers quickly). */
  smtpLimits?: Partial<SmtpLimits>;
  /** MTA-STS policy fetch deadline (default 10 s). */
  mtaStsFetchTimeoutMs?: number;
  /** Deadline of each BIMI fetch, logo and certificate (default 10 s). */
  bimiFetchTimeoutMs?: number;
  /** The name sent in EHLO (default: SMTP_HELO_NAME). */
  ehloName?: string;
  now?: () => Date;
}

type Run = (domain: string, asker: DnsAsker, ctx: CheckContext) => Promise<CheckOutput>;

/**
 * One lane's check as a function of (domain, context): what the lane runner calls through
 * createMailChecks, and what a recursive scan can call for any domain it discovers.
 */
export type MailLaneCheck = (lane: MailLaneName, domain: string, ctx: CheckContext) => Promise<CheckOutput>;

export function createMailChecks(opts: MailCheckOptions = {}): CheckSpec[] {
  const { run, timeoutMs } = mailLaneChecks(opts);
  return (Object.keys(mailLanes) as MailLaneName[]).map((lane) => ({
    name: mailLanes[lane].check,
    lane: 'mail',
    timeoutMs: timeoutMs[lane],
    run: (task, ctx) => run(lane, (task.objectKey || task.target).toLowerCase().replace(/\.$/, ''), ctx),
  }));
}

export function mailLaneChecks(opts: MailCheckOptions = {}): {
  run: MailLaneCheck;
  timeoutMs: Record<MailLaneName, number>;
} {
  const limits: SmtpLimits = { ...DEFAULT_SMTP_LIMITS, ...opts.smtpLimits };
  const fetchTimeoutMs = opts.mtaStsFetchTimeoutMs ?? 10_000;
  const bimiFetchMs = opts.bimiFetchTimeoutMs ?? 10_000;
  // DNS questions go out in waves of at most DNS_TIMEOUT_MS (2 s by default); each deadline below
  // covers its lane's waves with room to spare. A check that overruns is `timeout`, without output.
  // The port-25 session, then (only after no STARTTLS) the port-465 probe on the same address.
  const smtpMs =
    3 * 2_000 +
    limits.connectMs +
    limits.bannerMs +
    2 * limits.commandMs +
    limits.tlsMs +
    limits.quitMs +
    (limits.connectMs + limits.tlsMs + limits.bannerMs + limits.quitMs) +
    5_000;
  const runs: Record<MailLaneName, { run: Run; timeoutMs: number }> = {
    mx: { run: runMxCheck, timeoutMs: 20_000 },
    spf: { run: runSpfCheck, timeoutMs: 45_000 },
    dmarc: { run: runDmarcCheck, timeoutMs: 20_000 },
    mta_sts: { run: (d, a, c) => runMtaStsCheck(d, a, c, { fetchTimeoutMs }), timeoutMs: fetchTimeoutMs + 15_000 },
    tls_rpt: { run: runTlsRptCheck, timeoutMs: 15_000 },
    dkim: { run: runDkimCheck, timeoutMs: 30_000 },
    // Two DNS waves, then the logo and the certificate fetched at once (10 s each) and checked.
    bimi: {
      run: (d, a, c) => runBimiCheck(d, a, c, { fetchTimeoutMs: bimiFetchMs }),
      timeoutMs: bimiFetchMs + 20_000,
    },
    dane: { run: runDaneCheck, timeoutMs: 20_000 },
    zone: { run: runZoneCheck, timeoutMs: 20_000 },
    smtp_starttls: {
      run: (d, a, c) => runSmtpStarttlsCheck(d, a, c, { limits, ehloName: opts.ehloName, now: opts.now }),
      timeoutMs: smtpMs,
    },
  };
  const run: MailLaneCheck = (lane, domain, ctx) => {
    const resolver = resolverOf(ctx.runtime);
    if (!resolver) {
      return Promise.resolve(
        notRun(
          'unavailable',
          'resolver_not_configured',
          [{ code: `${lane}_unavailable`, message: 'No DNS resolver is configured; the check did not run.' }],
          [],
        ),
      );
    }
    return runs[lane].run(domain, new DnsAsker(resolver, ctx.signal), ctx);
  };
  const timeoutMs = Object.fromEntries(
    (Object.keys(runs) as MailLaneName[]).map((l) => [l, runs[l].timeoutMs]),
  ) as Record<MailLaneName, number>;
  return { run, timeoutMs };
}

export const mailChecks: CheckSpec[] = createMailChecks();
