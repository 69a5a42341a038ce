// The scan's passive posture tasks, each running a product's own checks for one name:
//   scan.web     the web lookup's http and tls checks for https://<host>/ (both chains, headers,
//                certificate), plus what they point at: certificate SANs and (deep) the hosts the
//                page links to; and the takeover fingerprint when the host is a provider's alias.
//   scan.mail    the mail lookup's lanes for a domain (DKIM selector probes from deep up), with
//                its cross-lane derivations (DANE, MTA-STS enforce, BIMI prerequisites).
//   scan.domain  the domain lookup's delegation and registration of the registrable domain.
import { assembleMail } from '../../mail/assemble.ts';
import { mailLaneChecks } from '../../mail/checks.ts';
import { mailLanes, type MailLaneName } from '../../mail/lanes.ts';
import { lazy } from '../../kit/lazy.ts';
import { webPhases, type PostureOptions } from './posture-timeouts.ts';

export { postureTimeouts, webPhases, type PostureOptions } from './posture-timeouts.ts';
import type { CheckContext } from '../../kit/product-contract.ts';
import type { CheckOutput, TaskOutcomeView } from '../../../contract/tasks.ts';
import { isHostName, normalName, scopeOf } from '../rules/names.ts';
import type { Discovery, WebFacts } from '../rules/planner.ts';
import { fingerprintMatch, providerFor } from '../rules/takeover.ts';
import { scanFinding } from '../findings.ts';
import { capped, combinedStatus, composeOutputs, placeObjects } from './compose.ts';
import { profiles, type ScanProfile } from '../rules/profiles.ts';

type ScanTask = { objectKey: string; params: Record<string, unknown>; distance?: number };

// The lookups' checks, loaded on first use (kit/lazy.ts): each lane loads only its own.
const runDelegationCheck = lazy(() => import('../../domain/delegation-check.ts').then((m) => m.runDelegationCheck));
const runRegistrationCheck = lazy(() =>
  import('../../domain/registration-check.ts').then((m) => m.runRegistrationCheck),
);
const runHttpCheck = lazy(() => import('../../web/http-check.ts').then((m) => m.runHttpCheck));
const runTlsCheck = lazy(() => import('../../web/tls-check.ts').then((m) => m.runTlsCheck));

/**
 * The check's context with the addresses its host's dns task resolved (task params `addresses`,
 * `addressesUntil`: planner.ts), answered by the guard for that host until they expire instead of
 * asking DNS again in this lane. The guard still vets them at every use; a redirect to another
 * host, or a check that runs after they expired, resolves as before.
 */
export function withCarriedAddresses(task: ScanTask, host: string, ctx: CheckContext): CheckContext {
  const { addresses, addressesUntil } = task.params;
  const guard = ctx.runtime.services.outbound;
  if (!guard || typeof addressesUntil !== 'number' || addressesUntil <= Date.now()) return ctx;
  if (!Array.isArray(addresses) || addresses.length === 0 || !addresses.every((a) => typeof a === 'string')) return ctx;
  const outbound = guard.knowing(host, addresses as string[], addressesUntil);
  return { ...ctx, runtime: { ...ctx.runtime, services: { ...ctx.runtime.services, outbound } } };
}

/** The context with the process guard replaced by one check's guard (OutboundGuard.forCheck). */
function sameCheck(ctx: CheckContext): CheckContext {
  const guard = ctx.runtime.services.outbound;
  if (!guard) return ctx;
  const outbound = guard.forCheck(ctx.signal);
  return { ...ctx, runtime: { ...ctx.runtime, services: { ...ctx.runtime.services, outbound } } };
}

export async function runScanWebCheck(
  task: ScanTask,
  checkCtx: CheckContext,
  o: PostureOptions = {},
): Promise<CheckOutput> {
  const host = normalName(String(task.params.host ?? task.objectKey));
  const ctx = withCarriedAddresses(task, host, checkCtx);
  const url = String(task.params.url ?? `https://${host}/`);
  const scope = scopeOf(String(task.params.scope ?? host));
  const sourceCap = Number(task.params.sourceCap ?? 50);
  const distance = task.distance ?? 0;
  // One check guard for both parts: they connect to :443 of the same address at the same moment,
  // and a refusal one of them meets is the other's answer too (src/net/connect-gate.ts), instead
  // of a second connection to a port that just said nothing listens there.
  const parts = sameCheck(ctx);
  const [http, tls] = await Promise.all([
    // A scan's web check is passive in every profile (no authorizedScope): redirects stay on the
    // web's own ports.
    runHttpCheck(url, parts, webPhases(o.web)),
    runTlsCheck(url, parts, { handshakeTimeoutMs: o.web?.handshakeTimeoutMs ?? 8000 }),
  ]);

  // Names the certificate and (when the profile follows links) the page point at.
  const followLinks = profiles[String(task.params.profile ?? 'deep') as ScanProfile]?.sources.includes('link') ?? false;
  const sans = ((tls.projection.certificate as { sans?: string[] } | undefined)?.sans ?? [])
    .map((s) => normalName(s))
    .filter((s) => !s.startsWith('*.') && s !== host && isHostName(s));
  const page =
    (http.projection.page as { linkedHosts?: string[]; linkedHostsTruncated?: boolean } | null | undefined) ?? null;
  const links = followLinks ? (page?.linkedHosts ?? []).map(normalName).filter((h) => h !== host && isHostName(h)) : [];
  const limitations = [];
  const discoveries: Discovery[] = [];
  for (const [source, names] of [
    ['san', sans],
    ['link', links],
  ] as const) {
    const { kept, truncated } = capped([...new Set(names)], sourceCap);
    discoveries.push(...kept.map((name) => ({ name, source })));
    if (truncated || (source === 'link' && page?.linkedHostsTruncated)) {
      limitations.push({
        code: 'source_truncated',
        message: `${host}: ${source === 'san' ? 'its certificate names' : 'its page links to'} more hosts than the profile follows from one source (${sourceCap}).`,
      });
    }
  }
  const extra: CheckOutput = {
    status: limitations.length > 0 ? 'partial' : 'completed',
    projection: {},
    objects: discoveries.map((d) => ({
      type: 'host',
      key: d.name,
      discovered: true,
      projection: { name: d.name, inScope: scope.inScope(d.name), foundVia: d.source, foundFrom: host },
    })),
    relations: discoveries
      .filter((d) => d.source === 'link')
      .map((d) => ({
        from: { type: 'host', key: d.name },
        relation: 'links_to' as const,
        to: { type: 'host', key: host },
      })),
    findings: [],
    limitations,
    sources: [],
  };
  // The tls check's SAN names carry no provenance of their own: ours (above) say where they came from.
  tls.objects = tls.objects.filter(
    (o) => !(o.type === 'host' && o.key !== host && discoveries.some((d) => d.name === o.key)),
  );
  for (const o of [http, tls, extra]) placeObjects(o, distance, scope.inScope);
  // Discovered names sit one hop beyond this host (placeObjects moved them from 0 by `distance`).
  for (const o of extra.objects) o.distance = scope.inScope(o.key) ? distance + 1 : 1;

  // Takeover: a provider's alias serving that provider's unclaimed-name page.
  const cnameTargets = (task.params.cnameTargets as string[] | undefined) ?? [];
  if (cnameTargets.some((t) => providerFor(t)))
    extra.findings.push(...(await takeoverFindings(host, cnameTargets, ctx)));

  const httpsResponded =
    (http.projection.chains as { https?: { outcome?: string } } | undefined)?.https?.outcome === 'response';
  const facts: WebFacts = { host, httpsResponded, discoveries, cnameTargets };
  return composeOutputs([http, tls, extra], { ...facts, http: http.projection, tls: tls.projection });
}

async function takeoverFindings(host: string, cnameTargets: readonly string[], ctx: CheckContext) {
  const guard = ctx.runtime.services.outbound;
  if (!guard) return [];
  for (const scheme of ['https', 'http']) {
    try {
      const res = await guard.fetch(`${scheme}://${host}/`, {
        timeoutMs: 8000,
        maxBytes: 256 * 1024,
        maxRedirects: 2,
        signal: ctx.signal,
      });
      const provider = fingerprintMatch(host, cnameTargets, res.body.toString('utf8'));
      if (provider) {
        const code = provider.edgeCase ? 'scan_takeover_fingerprint_edge_case' : 'scan_takeover_fingerprint';
        return [
          scanFinding(
            code,
            { type: 'host', key: host },
            `${host} is an alias of ${cnameTargets.join(' → ')} (${provider.name}), which serves its page for an unclaimed name.`,
            [
              `CNAME ${[host, ...cnameTargets].join(' → ')}`,
              `${scheme}://${host}/ → ${res.status}, body contains the ${provider.name} fingerprint`,
            ],
          ),
        ];
      }
      return [];
    } catch {
      // No page on this scheme: try the other; nothing on either means no fingerprint finding.
    }
  }
  return [];
}

export async function runScanMailCheck(
  task: ScanTask,
  ctx: CheckContext,
  o: PostureOptions = {},
): Promise<CheckOutput> {
  const domain = normalName(task.objectKey);
  const { run } = mailLaneChecks(o.mail);
  const lanes = (Object.keys(mailLanes) as MailLaneName[]).filter((l) => l !== 'dkim' || task.params.dkim === true);
  const scope = scopeOf(String(task.params.scope ?? domain));
  const outputs = (await Promise.all(lanes.map((l) => run(l, domain, ctx)))).map((o, i) =>
    placeObjects(withPart(o, lanes[i]!), task.distance ?? 0, scope.inScope),
  );
  // The lookup's own assembly gives the cross-lane derivations (DANE × STARTTLS…) and lane statuses.
  const views: TaskOutcomeView[] = lanes.map((l, i) => ({
    check: mailLanes[l].check,
    productLane: l,
    required: mailLanes[l].required,
    objectKey: domain,
    status: outputs[i]!.status,
    ...(outputs[i]!.reason ? { reason: outputs[i]!.reason } : {}),
    output: outputs[i]!,
  }));
  const assembled = assembleMail(
    domain,
    views,
    lanes.includes('dkim')
      ? {}
      : {
          // Not run for this profile: skipped, never a lane that "left no outcome".
          notPlanned: {
            dkim: {
              reason: 'not_probed',
              message: 'This profile does not probe DKIM selectors (deep and advanced do).',
            },
          },
        },
  );
  const derived: CheckOutput[] = (assembled.derived ?? []).map((d) => ({
    status: 'completed',
    projection: {},
    objects: d.objects,
    relations: d.relations,
    findings: d.findings.map((f) => ({ ...f, part: d.lane })),
    limitations: [],
    sources: d.sources,
  }));
  // The mail task's status is its lanes' as the lookup reports them; `lanes` in its projection
  // keeps each one's (a disappeared finding is observed by the status of the lane that raised it:
  // its `part`, CONTRACT §13) (dane partial without a
  // certificate…); a lane the profile does not run is there as `skipped`.
  const out = composeOutputs(
    [...outputs, ...derived],
    { domain, lanes: assembled.lanes, result: assembled.result },
    combinedStatus(assembled.lanes.map((l) => l.status)),
  );
  out.limitations.push(
    ...assembled.limitations.filter((l) => !out.limitations.some((x) => x.code === l.code && x.message === l.message)),
  );
  return out;
}

/**
 * Each finding names the mail lane that raised it: with DKIM probing (deep, advanced) the task is
 * never more than partial, yet its DMARC lane may have completed and seen a policy fixed.
 */
function withPart(out: CheckOutput, lane: MailLaneName): CheckOutput {
  return { ...out, findings: out.findings.map((f) => ({ ...f, part: lane })) };
}

export async function runScanDomainCheck(
  task: ScanTask,
  ctx: CheckContext,
  o: PostureOptions = {},
): Promise<CheckOutput> {
  const domain = normalName(task.objectKey);
  const rdapTimeoutMs = o.rdapTimeoutMs ?? 15_000;
  const scope = scopeOf(String(task.params.scope ?? domain));
  const [delegation, registration] = (
    await Promise.all([runDelegationCheck(domain, ctx), runRegistrationCheck(domain, ctx, { rdapTimeoutMs })])
  ).map((o) => placeObjects(o, task.distance ?? 0, scope.inScope)) as [CheckOutput, CheckOutput];
  return composeOutputs([delegation, registration], {
    domain,
    delegation: delegation.projection,
    registration: registration.projection,
  });
}
