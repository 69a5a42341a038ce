// Active work of an advanced scan (options.active, after the admission gates), for in-scope names
// inside the approved scope that covers the target only (the planner decides; these checks never widen it).
// Every connection goes through the outbound guard.
//   scan.tcp_probe      TCP connect to a documented port list, bounded concurrency per host
//   scan.axfr           zone transfer of the approved scope's apex, asked of its name servers
//                       inside that scope only
//   scan.wordlist       a documented wordlist of names under the approved scope, with random
//                       canary names around it
//   scan.well_known     /.well-known/security.txt, /.git/HEAD, /.env
//   scan.tls_protocols  the web lookup's TLS protocol enumeration
// Every connection goes through the active guard (runtime.services.activeOutbound), which also
// refuses ACTIVE_DENY_CIDRS (cloud metadata by default) whatever the approval; a verified scope's
// proof is asked again before each task runs (checks/index.ts, kit/active-admission.ts).
// Each connection resolves its host again, inside its own task, through the guard (whose lookup is
// pinned to the addresses it just vetted): an earlier task's answer is never reused, so a record
// changed since the name's dns task (a rebinding) is vetted again before anything connects.
import { randomBytes } from 'node:crypto';
import { presence, recordsOf } from '../../../dns/presence.ts';
import { transferOverStream, type TransferResult } from '../../../dns/zone-transfer.ts';
import type { OutboundGuard } from '../../../net/outbound-guard.ts';
import { OutboundFetchError, OutboundRefusedError } from '../../../net/outbound-guard.ts';
import type { CheckContext } from '../../kit/product-contract.ts';
import type { CheckOutput, FindingOut, ObjectOut, RelationOut } from '../../../contract/tasks.ts';
import type { Limitation } from '../../../contract/lanes.ts';
import { notRun, resolverOf } from '../../kit/dns-replies.ts';
import { inApprovedScope, isHostName, normalName, scopeOf } from '../rules/names.ts';
import type { Discovery } from '../rules/planner.ts';
import { scanFinding } from '../findings.ts';
import { runTlsProtocolsCheck } from '../../web/tls-protocols-check.ts';
import { capped } from './compose.ts';

type ScanTask = { objectKey: string; params: Record<string, unknown>; distance?: number };

/** Active work's guard: it also refuses ACTIVE_DENY_CIDRS, whatever the approval. */
function guardOf(ctx: CheckContext): OutboundGuard | undefined {
  return ctx.runtime.services.activeOutbound;
}

const noGuard = (what: string) =>
  notRun(
    'unavailable',
    'outbound_not_configured',
    [{ code: 'active_unavailable', message: `No outbound guard in this process: ${what} did not run.` }],
    [],
  );

/** Vetted addresses of a host, or the lane status that says why there are none. */
async function addressesOf(guard: OutboundGuard, host: string, signal: AbortSignal): Promise<string[] | CheckOutput> {
  try {
    return await guard.resolve(host, signal);
  } catch (err) {
    if (err instanceof OutboundRefusedError)
      return notRun(
        'unavailable',
        'target_not_allowed',
        [
          {
            code: 'target_not_allowed',
            message: `${host} resolves to an address outbound checks may not reach; it was not probed.`,
          },
        ],
        [],
      );
    if (err instanceof OutboundFetchError && err.kind === 'host_not_found')
      return notRun('skipped', 'not_applicable', [], []);
    return notRun(
      'unavailable',
      'dns_failure',
      [{ code: 'dns_indeterminate', message: `The addresses of ${host} are unknown; it was not probed.` }],
      [],
    );
  }
}

/** Names a zone-wide source found, as discovered objects with their provenance. */
function recorded(
  discoveries: readonly Discovery[],
  zone: string,
  distance: number,
): Pick<CheckOutput, 'objects' | 'relations'> {
  return {
    objects: discoveries.map((d) => ({
      type: 'host',
      key: d.name,
      discovered: true,
      distance,
      projection: { name: d.name, inScope: true, foundVia: d.source, foundFrom: zone },
    })),
    relations: discoveries.map((d) => ({
      from: { type: 'host', key: d.name },
      relation: 'discovered_from' as const,
      to: { type: 'domain', key: zone },
    })),
  };
}

// ---- scan.tcp_probe ---------------------------------------------------------------------------

/** The ports probed, and the ones whose exposure is a finding (databases, caches, remote admin). */
export const TCP_PORTS: ReadonlyArray<{ port: number; service: string; sensitive: boolean }> = [
  { port: 21, service: 'ftp', sensitive: false },
  { port: 22, service: 'ssh', sensitive: false },
  { port: 23, service: 'telnet', sensitive: true },
  { port: 25, service: 'smtp', sensitive: false },
  { port: 53, service: 'dns', sensitive: false },
  { port: 80, service: 'http', sensitive: false },
  { port: 110, service: 'pop3', sensitive: false },
  { port: 143, service: 'imap', sensitive: false },
  { port: 443, service: 'https', sensitive: false },
  { port: 445, service: 'smb', sensitive: true },
  { port: 465, service: 'smtps', sensitive: false },
  { port: 587, service: 'submission', sensitive: false },
  { port: 993, service: 'imaps', sensitive: false },
  { port: 995, service: 'pop3s', sensitive: false },
  { port: 1433, service: 'mssql', sensitive: true },
  { port: 1521, service: 'oracle', sensitive: true },
  { port: 2049, service: 'nfs', sensitive: true },
  { port: 2375, service: 'docker', sensitive: true },
  { port: 3306, service: 'mysql', sensitive: true },
  { port: 3389, service: 'rdp', sensitive: true },
  { port: 5432, service: 'postgresql', sensitive: true },
  { port: 5900, service: 'vnc', sensitive: true },
  { port: 6379, service: 'redis', sensitive: true },
  { port: 8080, service: 'http-alt', sensitive: false },
  { port: 8443, service: 'https-alt', sensitive: false },
  { port: 9200, service: 'elasticsearch', sensitive: true },
  { port: 11211, service: 'memcached', sensitive: true },
  { port: 27017, service: 'mongodb', sensitive: true },
];

export interface TcpProbeOptions {
  connectTimeoutMs?: number;
  /** Connections in flight per host. */
  concurrency?: number;
}

export async function runTcpProbeCheck(
  task: ScanTask,
  ctx: CheckContext,
  o: TcpProbeOptions = {},
): Promise<CheckOutput> {
  const guard = guardOf(ctx);
  if (!guard) return noGuard('the port probe');
  const host = normalName(String(task.params.host ?? task.objectKey));
  const addresses = await addressesOf(guard, host, ctx.signal);
  if (!Array.isArray(addresses)) return addresses;
  const address = addresses[0]!;
  const states = new Map<number, 'open' | 'closed' | 'filtered'>();
  let next = 0;
  const worker = async () => {
    while (next < TCP_PORTS.length && !ctx.signal.aborted) {
      const { port } = TCP_PORTS[next++]!;
      try {
        const socket = await guard.connectTcp(
          { address, port, host },
          { timeoutMs: o.connectTimeoutMs ?? 2000, signal: ctx.signal },
        );
        socket.destroy();
        states.set(port, 'open');
      } catch (err) {
        states.set(port, err instanceof OutboundFetchError && err.kind === 'timeout' ? 'filtered' : 'closed');
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 8 }, worker));
  const hostRef = { type: 'host', key: host };
  const objects: ObjectOut[] = [];
  const relations: RelationOut[] = [];
  const findings: FindingOut[] = [];
  for (const p of TCP_PORTS) {
    if (states.get(p.port) !== 'open') continue;
    const ref = { type: 'service', key: `${host}:${p.port}/tcp` };
    objects.push({
      ...ref,
      projection: { host, address, port: p.port, protocol: 'tcp', service: p.service, state: 'open' },
    });
    relations.push({ from: ref, relation: 'discovered_from', to: hostRef });
    if (p.sensitive)
      findings.push(
        scanFinding(
          'scan_sensitive_port_open',
          ref,
          `${host} accepts TCP connections on port ${p.port} (${p.service}).`,
          [`connect ${address}:${p.port}: open`],
        ),
      );
  }
  const limitations: Limitation[] = [];
  if (addresses.length > 1)
    limitations.push({
      code: 'probe_first_address_only',
      message: `${host} has ${addresses.length} addresses; ${address} was probed.`,
    });
  const filtered = TCP_PORTS.filter((p) => states.get(p.port) === 'filtered').map((p) => p.port);
  return {
    status: 'completed',
    projection: {
      host,
      address,
      ports: TCP_PORTS.map((p) => ({ port: p.port, service: p.service, state: states.get(p.port) ?? 'not_probed' })),
      filtered,
    },
    objects,
    relations,
    findings,
    limitations,
    sources: [{ source: 'tcp_connect' }],
  };
}

// ---- scan.axfr ------------------------------------------------------------------------------

const AXFR_MAX_RECORDS = 5000;

export async function runAxfrCheck(
  task: ScanTask,
  ctx: CheckContext,
  o: { timeoutMs?: number } = {},
): Promise<CheckOutput> {
  const guard = guardOf(ctx);
  const resolver = resolverOf(ctx.runtime);
  if (!guard || !resolver) return noGuard('the zone transfer');
  const zone = normalName(task.objectKey);
  const scope = scopeOf(String(task.params.scope ?? zone));
  // The approved scope that holds this scan's active work (the planner asks only for its apex).
  const approvedScope = normalName(String(task.params.approvedScope ?? zone));
  const sourceCap = Number(task.params.sourceCap ?? 200);
  // AXFR only of a zone whose apex is inside the approved scope (the planner never asks otherwise).
  if (!inApprovedScope(zone, [approvedScope]))
    return notRun(
      'skipped',
      'not_applicable',
      [
        {
          code: 'axfr_out_of_scope',
          message: `${zone} is outside the approved scope ${approvedScope}: no transfer was asked.`,
        },
      ],
      [],
    );
  const ns = await resolver.query(zone, 'NS', { signal: ctx.signal });
  if (presence(ns) === 'indeterminate') {
    return notRun(
      ns.outcome === 'timeout' ? 'timeout' : 'unavailable',
      'dns_failure',
      [
        {
          code: 'dns_indeterminate',
          message: `The NS query for ${zone} got no usable answer: no zone transfer was asked.`,
        },
      ],
      [],
    );
  }
  const servers = recordsOf(ns).map((r) => normalName(String(r.data)));
  // A name server outside the approved scope is someone else's (or not approved): never asked.
  const inScope = servers.filter((s) => inApprovedScope(s, [approvedScope]));
  const limitations: Limitation[] = [];
  if (servers.length > inScope.length)
    limitations.push({
      code: 'axfr_out_of_scope_servers',
      message: `${servers.length - inScope.length} name server(s) of ${zone} are outside the approved scope ${approvedScope} and were not asked for a transfer.`,
    });
  const findings: FindingOut[] = [];
  const names = new Set<string>();
  const asked: Array<{ server: string; outcome: string }> = [];
  for (const server of inScope) {
    const addresses = await addressesOf(guard, server, ctx.signal);
    if (!Array.isArray(addresses)) {
      asked.push({ server, outcome: 'unreachable' });
      continue;
    }
    const result = await transfer(guard, addresses[0]!, server, zone, o.timeoutMs ?? 10_000, ctx.signal);
    asked.push({ server, outcome: result.outcome });
    if (result.outcome === 'allowed') {
      findings.push(
        scanFinding(
          'scan_zone_transfer_allowed',
          { type: 'domain', key: zone },
          `${server} transferred the zone ${zone} (${result.records} records).`,
          [`AXFR ${zone} @${server}: ${result.records} records`],
        ),
      );
      for (const n of result.names) if (scope.inScope(n) && isHostName(n)) names.add(n);
    }
  }
  // One transfer may name thousands of hosts: the profile's per-source cap holds for it too.
  const seen = [...names].filter((n) => n !== zone).sort();
  const { kept, truncated } = capped(seen, sourceCap);
  if (truncated)
    limitations.push({
      code: 'source_truncated',
      message: `${zone}: the transfer named ${seen.length} hosts; the first ${sourceCap} are followed (the profile's limit per source).`,
    });
  const discoveries: Discovery[] = kept.map((name) => ({ name, source: 'axfr' }));
  const distance = (task.distance ?? 0) + 1;
  const failed = asked.filter((a) => a.outcome === 'timeout' || a.outcome === 'failed' || a.outcome === 'unreachable');
  if (failed.length > 0)
    limitations.push({
      code: 'axfr_unanswered',
      message: `No transfer answer from ${failed.map((f) => f.server).join(', ')}: whether they allow one is unknown.`,
    });
  return {
    status:
      failed.length > 0 && failed.length === asked.length && asked.length > 0
        ? 'unavailable'
        : failed.length > 0 || truncated
          ? 'partial'
          : 'completed',
    projection: { zone, approvedScope, servers: asked, namesSeen: seen.length, discoveries },
    ...recorded(discoveries, zone, distance),
    findings,
    limitations,
    sources: [{ source: 'axfr' }],
  };
}

async function transfer(
  guard: OutboundGuard,
  address: string,
  server: string,
  zone: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<TransferResult> {
  let socket;
  try {
    socket = await guard.connectTcp({ address, port: 53, host: server }, { timeoutMs, signal });
  } catch (err) {
    return {
      outcome: err instanceof OutboundFetchError && err.kind === 'timeout' ? 'timeout' : 'failed',
      records: 0,
      names: [],
    };
  }
  return transferOverStream(socket, zone, { timeoutMs, maxRecords: AXFR_MAX_RECORDS });
}

// ---- scan.wordlist ----------------------------------------------------------------------------

/** Names worth trying in any zone (docs/products/scan.md). */
export const WORDLIST = [
  'www',
  'mail',
  'webmail',
  'smtp',
  'imap',
  'pop',
  'mx',
  'ns1',
  'ns2',
  'vpn',
  'remote',
  'portal',
  'admin',
  'intranet',
  'internal',
  'dev',
  'staging',
  'stage',
  'test',
  'qa',
  'uat',
  'beta',
  'demo',
  'api',
  'app',
  'apps',
  'auth',
  'sso',
  'login',
  'id',
  'cdn',
  'static',
  'assets',
  'img',
  'media',
  'files',
  'blog',
  'shop',
  'store',
  'm',
  'mobile',
  'support',
  'help',
  'docs',
  'status',
  'git',
  'gitlab',
  'jenkins',
  'ci',
  'grafana',
  'monitor',
  'owa',
  'autodiscover',
  'exchange',
  'ftp',
  'db',
  'backup',
] as const;
export const CANARIES = 5;
/** More canaries than this resolving means the zone answers anything: the results prove nothing. */
export const CANARY_TOLERANCE = 1;

export async function runWordlistCheck(task: ScanTask, ctx: CheckContext): Promise<CheckOutput> {
  const resolver = resolverOf(ctx.runtime);
  if (!resolver)
    return notRun(
      'unavailable',
      'resolver_not_configured',
      [{ code: 'dns_unavailable', message: 'No DNS resolver is configured; the wordlist did not run.' }],
      [],
    );
  const zone = normalName(task.objectKey);
  const sourceCap = Number(task.params.sourceCap ?? 200);
  const canaries = Array.from({ length: CANARIES }, () => `lss-canary-${randomBytes(6).toString('hex')}`);
  const words = [...canaries.slice(0, 2), ...WORDLIST, ...canaries.slice(2)];
  const replies = await Promise.all(words.map((w) => resolver.query(`${w}.${zone}`, 'A', { signal: ctx.signal })));
  const resolved = (w: string) => presence(replies[words.indexOf(w)]!) === 'present';
  const canaryHits = canaries.filter(resolved).length;
  const indeterminate = replies.filter((r) => presence(r) === 'indeterminate').length;
  const limitations: Limitation[] = [];
  let discoveries: Discovery[] = WORDLIST.filter(resolved).map((w) => ({ name: `${w}.${zone}`, source: 'wordlist' }));
  if (canaryHits > CANARY_TOLERANCE) {
    limitations.push({
      code: 'wordlist_dropped_canaries',
      message: `${canaryHits} of ${CANARIES} random canary names under ${zone} resolved: the zone answers any name, so the wordlist's ${discoveries.length} hits prove nothing and were dropped.`,
    });
    discoveries = [];
  }
  // The wordlist (58 names) is below every profile's cap today; the cap still holds if it grows.
  const hits = discoveries.length;
  const cappedHits = capped(discoveries, sourceCap);
  discoveries = cappedHits.kept;
  if (cappedHits.truncated)
    limitations.push({
      code: 'source_truncated',
      message: `${zone}: ${hits} wordlist names resolved; the first ${sourceCap} are followed (the profile's limit per source).`,
    });
  if (indeterminate > 0)
    limitations.push({
      code: 'dns_indeterminate',
      message: `${indeterminate} of ${words.length} wordlist questions under ${zone} got no usable answer: those names are unknown, not absent.`,
    });
  return {
    status: indeterminate > 0 || cappedHits.truncated ? 'partial' : 'completed',
    projection: { zone, tried: WORDLIST.length, canaries: CANARIES, canaryHits, namesSeen: hits, discoveries },
    ...recorded(discoveries, zone, (task.distance ?? 0) + 1),
    findings: [],
    limitations,
    sources: [{ source: 'dns_resolver' }],
  };
}

// ---- scan.well_known --------------------------------------------------------------------------

const HTML = /^\s*(<!doctype html|<html|<head|<body)/i;

export async function runWellKnownCheck(
  task: ScanTask,
  ctx: CheckContext,
  o: { timeoutMs?: number } = {},
): Promise<CheckOutput> {
  const guard = guardOf(ctx);
  if (!guard) return noGuard('the well-known paths');
  const host = normalName(String(task.params.host ?? task.objectKey));
  const base = `https://${host}`;
  const hostRef = { type: 'host', key: host };
  const get = async (path: string) => {
    try {
      const res = await guard.fetch(`${base}${path}`, {
        timeoutMs: o.timeoutMs ?? 8000,
        maxBytes: 64 * 1024,
        maxRedirects: 0,
        signal: ctx.signal,
      });
      return { status: res.status, body: res.body.toString('utf8'), type: String(res.headers['content-type'] ?? '') };
    } catch {
      return null; // no answer: nothing can be said about the path
    }
  };
  const [security, git, env] = await Promise.all([get('/.well-known/security.txt'), get('/.git/HEAD'), get('/.env')]);
  const findings: FindingOut[] = [];
  const limitations: Limitation[] = [];
  const paths: Record<string, number | null> = {
    '/.well-known/security.txt': security?.status ?? null,
    '/.git/HEAD': git?.status ?? null,
    '/.env': env?.status ?? null,
  };
  if (security && (security.status === 404 || security.status === 410)) {
    findings.push(
      scanFinding(
        'scan_security_txt_missing',
        hostRef,
        `${base}/.well-known/security.txt answered ${security.status}.`,
        [`GET /.well-known/security.txt → ${security.status}`],
      ),
    );
  }
  if (git && git.status === 200 && !HTML.test(git.body) && /^(ref: refs\/\S+|[0-9a-f]{40})\s*$/.test(git.body.trim())) {
    findings.push(
      scanFinding(
        'scan_exposed_git_repository',
        hostRef,
        `${base}/.git/HEAD is readable: the site's Git repository may be downloadable.`,
        [`GET /.git/HEAD → 200 "${git.body.trim().slice(0, 60)}"`],
      ),
    );
  }
  if (env && env.status === 200 && !HTML.test(env.body) && /^[A-Z_][A-Z0-9_]*=.*/m.test(env.body)) {
    findings.push(
      scanFinding('scan_exposed_env_file', hostRef, `${base}/.env is readable: it holds KEY=value settings.`, [
        `GET /.env → 200 (${env.body.split('\n').length} lines; values not stored)`,
      ]),
    );
  }
  const unanswered = Object.entries(paths)
    .filter(([, s]) => s === null)
    .map(([p]) => p);
  if (unanswered.length > 0)
    limitations.push({
      code: 'well_known_unanswered',
      message: `${base}: no answer for ${unanswered.join(', ')}; nothing is known about them.`,
    });
  return {
    status: unanswered.length === 3 ? 'unavailable' : unanswered.length > 0 ? 'partial' : 'completed',
    ...(unanswered.length === 3 ? { reason: 'no_response' } : {}),
    projection: { host, paths },
    objects: [],
    relations: [],
    findings,
    limitations,
    sources: [{ source: 'https' }],
  };
}

// ---- scan.tls_protocols ---------------------------------------------------------------------

export function runScanTlsProtocolsCheck(
  task: ScanTask,
  ctx: CheckContext,
  o: { handshakeTimeoutMs?: number } = {},
): Promise<CheckOutput> {
  return runTlsProtocolsCheck(String(task.params.url ?? `https://${task.objectKey}/`), ctx, {
    handshakeTimeoutMs: o.handshakeTimeoutMs ?? 8000,
  });
}
