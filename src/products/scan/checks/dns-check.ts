// scan.dns: the DNS of one in-scope name, the heart of recursion. It asks A, AAAA, CNAME, MX, NS,
// TXT and CAA (SOA and a documented list of SRV names for the registrable domain), compares the
// answers with its level's wildcard (params.gate: the wildcard probe, released to this task), and
// reports what it saw as objects (addresses, the names records point at, each with its relation)
// and as `discoveries` the planner may follow.
//   - A name whose every record matches the wildcard is not a host: it is folded into the one
//     wildcard object of its level (CheckOutput.folds: an object recorded for it when it was
//     found, as an MX, SPF or SAN name, leaves the results; the wildcard object lists it with how
//     it was found), and nothing is planned from it. An MX or SRV name stays what it is where it
//     was found (the mail posture's MX hosts, the SRV record), never a host of its own.
//   - The DNS rule holds throughout (src/dns/presence.ts): an indeterminate type is a limitation
//     and makes the task partial, never an absence; a dangling CNAME is a finding only on an
//     authoritative NXDOMAIN for the name (the rcode of a CNAME chain is its last target's).
//   - Out-of-scope names are recorded at distance 1, never followed; in-scope ones one hop further
//     than this name.
//   - What points into the deployment's own network is a fact, never a lead: a name under a
//     special-use suffix (src/net/special-use.ts) that an MX, NS, SRV or SPF record names is
//     recorded with `specialUse` and never becomes a discovery (never resolved, never scanned); a
//     CNAME chain into one never reaches this check (the resolver cuts it where it leaves public
//     DNS: src/net/special-use-resolver.ts); an address the outbound guard refuses (private,
//     loopback… outside ALLOW_PRIVATE_TARGETS) is recorded with `outboundRefused` and kept out of
//     the addresses the planner plans web and active work from.
import type { QueryResult, RecordType } from '../../../dns/types.ts';
import { indeterminateLimitation, presence, recordsOf } from '../../../dns/presence.ts';
import type { CheckContext } from '../../kit/product-contract.ts';
import type {
  CheckOutput,
  FindingOut,
  GateResult,
  ObjectFold,
  ObjectOut,
  ObjectRef,
  RelationOut,
} from '../../../contract/tasks.ts';
import type { Limitation } from '../../../contract/lanes.ts';
import { canonicalIp, failureOf, notRun, resolverOf } from '../../kit/dns-replies.ts';
import {
  WILDCARD_TYPES,
  aliasTargetMatch,
  matchWildcard,
  type WildcardMatch,
  type WildcardProbe,
  type WildcardType,
} from '../rules/wildcard.ts';
import { isHostName, isServiceName, normalName, parentLevel, scopeOf } from '../rules/names.ts';
import type { Discovery, DnsFacts, TaskPart } from '../rules/planner.ts';
import type { NameSource } from '../rules/profiles.ts';
import { scanFinding } from '../findings.ts';
import { capped } from './compose.ts';
import { ADDRESS_PART } from '../changes.ts';
import { classifyAddress, isAllowedTarget } from '../../../net/address-policy.ts';
import { specialUseOf, specialUsePolicy } from '../../../net/special-use.ts';

const BASE_TYPES: readonly RecordType[] = ['A', 'AAAA', 'CNAME', 'MX', 'NS', 'TXT', 'CAA'];

/** SRV names probed at the registrable domain (services that publish their hosts this way). */
export const SRV_PROBES = [
  '_sip._tcp',
  '_sips._tcp',
  '_sip._udp',
  '_xmpp-server._tcp',
  '_xmpp-client._tcp',
  '_submission._tcp',
  '_submissions._tcp',
  '_imaps._tcp',
  '_pop3s._tcp',
  '_autodiscover._tcp',
  '_caldavs._tcp',
  '_carddavs._tcp',
  '_ldap._tcp',
  '_kerberos._tcp',
] as const;

/** CNAME chains longer than this are not followed (resolvers give up far sooner). */
export const CNAME_RUNAWAY = 16;

const DNS_SOURCE = { source: 'dns_resolver' };

interface Found {
  objects: ObjectOut[];
  relations: RelationOut[];
  discoveries: Discovery[];
  truncated: Set<NameSource>;
}

export async function runScanDnsCheck(
  task: { objectKey: string; params: Record<string, unknown>; distance?: number },
  ctx: CheckContext,
): Promise<CheckOutput> {
  const resolver = resolverOf(ctx.runtime);
  if (!resolver)
    return notRun(
      'unavailable',
      'resolver_not_configured',
      [{ code: 'dns_unavailable', message: 'No DNS resolver is configured; the name was not resolved.' }],
      [],
    );
  const name = normalName(task.objectKey);
  const distance = task.distance ?? 0;
  const target = String(task.params.target ?? name);
  const scope = scopeOf(String(task.params.scope ?? target));
  const sourceCap = Number(task.params.sourceCap ?? 50);
  const types = [...BASE_TYPES, ...(name === scope.registrable ? ['SOA' as const] : [])];
  const q = (n: string, t: RecordType) => resolver.query(n, t, { signal: ctx.signal });
  const results = await Promise.all(types.map((t) => q(name, t)));
  const by = Object.fromEntries(types.map((t, i) => [t, results[i]!])) as Record<string, QueryResult>;

  const limitations: Limitation[] = results
    .filter((r) => presence(r) === 'indeterminate')
    .map((r) => indeterminateLimitation(r));
  if (limitations.length === results.length) {
    const f = failureOf(results);
    return notRun(f.status, f.reason, limitations, [DNS_SOURCE], {
      name,
      match: 'unknown',
      addresses: [],
      hasMx: false,
      cnameTargets: [],
      discoveries: [],
    } satisfies DnsFacts as unknown as Record<string, unknown>);
  }

  // The wildcard of this name's level, before anything fans out from it.
  const gate = task.params.gate as GateResult | undefined;
  const probe = (gate?.projection ?? null) as WildcardProbe | null;
  let match: WildcardMatch | 'n/a' = 'n/a';
  if (name !== target) {
    match = probe
      ? matchWildcard(
          probe,
          Object.fromEntries(WILDCARD_TYPES.map((t) => [t, by[t]!])) as Record<WildcardType, QueryResult>,
        )
      : 'unknown';
    if (match === 'match') return collapsed(name, probe!, distance, task.params.via);
    if (match === 'unknown') {
      limitations.push({
        code: 'wildcard_unknown',
        message: `Whether ${parentLevel(name)} answers any name is unknown (its wildcard probe got no usable answer): ${name} is kept as a host.`,
      });
    } else if (match === 'possible') {
      limitations.push({
        code: 'wildcard_possible',
        message: `Random names under ${parentLevel(name)} answered with varying data: ${name} may be a wildcard answer; it is kept and marked.`,
      });
    }
  }

  const self: ObjectRef = { type: name === scope.registrable ? 'domain' : 'host', key: name };
  const found: Found = { objects: [], relations: [], discoveries: [], truncated: new Set() };
  const findings: FindingOut[] = [];
  const at = (n: string) => (scope.inScope(n) ? distance + 1 : 1);
  const policy = specialUsePolicy(ctx.runtime.config);
  // CNAME targets that only the wildcard of this name's level answers (judged from this name's
  // own replies): like an MX or SRV name that collapses, no host of their own; this name's
  // cname_to names the wildcard object, which lists them, and this name's projection says so.
  const chain = cnameChain(name, by.A!, by.CNAME!);
  const wildcardTargets = new Set(
    probe
      ? chain.targets.filter(
          (t) =>
            scope.inScope(t) &&
            aliasTargetMatch(
              probe,
              t,
              Object.fromEntries(WILDCARD_TYPES.map((w) => [w, by[w]!])) as Record<WildcardType, QueryResult>,
            ) === 'match',
        )
      : [],
  );
  const levelObject = probe ? wildcardObject(probe, distance + 1) : null;
  const folds: ObjectFold[] = [];
  const collapsedRef = (n: string): ObjectRef | null => {
    if (!wildcardTargets.has(n) || !levelObject) return null;
    if (!folds.some((f) => f.object.key === n)) {
      folds.push({
        object: { type: 'host', key: n },
        into: levelObject.ref,
        detail: { foundVia: 'cname', foundFrom: name },
      });
      if (folds.length === 1) found.objects.push(levelObject.object);
    }
    return levelObject.ref;
  };
  const record = (
    n: string,
    relation: RelationOut['relation'],
    direction: 'to' | 'from',
    source: NameSource | null,
  ) => {
    const other = normalName(n);
    if (!other || other === '.' || other === name || !isHostName(other)) return;
    const wildcard = relation === 'cname_to' ? collapsedRef(other) : null;
    if (wildcard) {
      found.relations.push({ from: self, relation, to: wildcard });
      return;
    }
    const ref: ObjectRef = { type: other === scope.registrable ? 'domain' : 'host', key: other };
    const special = specialUseOf(other, policy);
    found.objects.push({
      ...ref,
      discovered: true,
      distance: at(other),
      projection: {
        name: other,
        inScope: scope.inScope(other),
        foundVia: source ?? relation,
        foundFrom: name,
        ...(special ? { specialUse: special } : {}),
      },
    });
    found.relations.push(direction === 'to' ? { from: self, relation, to: ref } : { from: ref, relation, to: self });
    if (source && !special) found.discoveries.push({ name: other, source });
  };

  // Addresses (at the end of any CNAME chain).
  const addresses = [
    ...new Set(
      [...recordsOf(by.A!), ...recordsOf(by.AAAA!)]
        .map((r) => canonicalIp(r.data))
        .filter((x): x is string => x !== null),
    ),
  ];
  const refusedAddresses = addresses.filter((a) => !isAllowedTarget(a, ctx.runtime.config.ALLOW_PRIVATE_TARGETS));
  for (const address of addresses) {
    const refused = refusedAddresses.includes(address);
    found.objects.push({
      type: 'ip_address',
      key: address,
      discovered: true,
      distance: distance + 1,
      projection: {
        address,
        version: address.includes(':') ? 6 : 4,
        ...(refused ? { outboundRefused: true, range: classifyAddress(address) } : {}),
      },
    });
    found.relations.push({ from: self, relation: 'resolves_to', to: { type: 'ip_address', key: address } });
  }

  // The CNAME chain (from the A answer, which carries it), loops and runaways, dangling targets.
  if (chain.targets.length > 0) record(chain.targets[0]!, 'cname_to', 'to', 'cname');
  // The rest of the chain is recorded; recursion follows it one alias (one hop) at a time.
  for (let i = 1; i < chain.targets.length && i <= CNAME_RUNAWAY; i++) {
    const from = chain.targets[i - 1]!;
    const to = chain.targets[i]!;
    if (isHostName(from) && isHostName(to)) {
      const fromRef = collapsedRef(from) ?? { type: 'host', key: from };
      const toRef = collapsedRef(to);
      if (!toRef)
        found.objects.push({
          type: 'host',
          key: to,
          discovered: true,
          distance: at(to) + i,
          projection: { name: to, inScope: scope.inScope(to), foundVia: 'cname', foundFrom: from },
        });
      if (!toRef || fromRef.key !== toRef.key)
        found.relations.push({ from: fromRef, relation: 'cname_to', to: toRef ?? { type: 'host', key: to } });
    }
  }
  // A loop or a runaway chain is reported once, on the alias where it starts; the names along it
  // (followed because they were CNAME targets) do not repeat it.
  const startsChain = task.params.via !== 'cname';
  if (chain.loop && startsChain)
    findings.push(
      scanFinding('scan_cname_loop', self, `${name}'s CNAME chain comes back to ${chain.loop}.`, [
        `CNAME ${[name, ...chain.targets].slice(0, 20).join(' → ')}`,
      ]),
    );
  if (chain.targets.length > CNAME_RUNAWAY && startsChain) {
    findings.push(
      scanFinding(
        'scan_cname_chain_runaway',
        self,
        `${name}'s CNAME chain has more than ${CNAME_RUNAWAY} aliases; it was followed no further.`,
        [`CNAME ${[name, ...chain.targets.slice(0, CNAME_RUNAWAY)].join(' → ')} → …`],
      ),
    );
  }
  // RFC 6604: with a CNAME, the rcode is its last target's. NXDOMAIN is authoritative absence.
  if (chain.targets.length > 0 && !chain.loop && by.A!.outcome === 'nxdomain' && !isServiceName(name)) {
    const last = chain.targets[chain.targets.length - 1]!;
    findings.push(
      scanFinding('scan_dangling_cname', self, `${name} is an alias of ${last}, which does not exist (NXDOMAIN).`, [
        `CNAME ${[name, ...chain.targets].join(' → ')}`,
        `A ${name}: NXDOMAIN`,
      ]),
    );
  }

  // MX, NS, SPF, SRV: names the domain points at.
  for (const r of recordsOf(by.MX!)) record(String((r.data as { exchange: string }).exchange), 'mx_of', 'from', 'mx');
  for (const r of recordsOf(by.NS!)) record(String(r.data), 'ns_of', 'from', 'ns');
  for (const n of spfNames(recordsOf(by.TXT!))) record(n, 'discovered_from', 'from', 'spf');
  if (task.params.srvProbes === true) {
    const srv = await Promise.all(SRV_PROBES.map((s) => q(`${s}.${name}`, 'SRV')));
    for (const r of srv) {
      if (presence(r) === 'indeterminate') limitations.push(indeterminateLimitation(r, 'service record'));
      for (const rec of recordsOf(r))
        record(String((rec.data as { target: string }).target), 'discovered_from', 'from', 'srv');
    }
  }

  // One source may not flood the scan: at most sourceCap names each.
  const bySource = new Map<NameSource, Discovery[]>();
  for (const d of found.discoveries) bySource.set(d.source, [...(bySource.get(d.source) ?? []), d]);
  const discoveries: Discovery[] = [];
  for (const [source, list] of bySource) {
    const unique = [...new Map(list.map((d) => [d.name, d])).values()];
    const { kept, truncated } = capped(unique, sourceCap);
    discoveries.push(...kept);
    if (truncated) {
      found.truncated.add(source);
      limitations.push({
        code: 'source_truncated',
        message: `${name}: its ${source} records name ${unique.length} hosts; the first ${sourceCap} are followed (the profile's limit per source).`,
      });
    }
  }

  const facts: DnsFacts = {
    name,
    match,
    addresses: addresses.filter((a) => !refusedAddresses.includes(a)),
    refusedAddresses,
    ...addressesUntil(by.A!, by.AAAA!, addresses.length > 0 && refusedAddresses.length === 0, Date.now()),
    hasMx: recordsOf(by.MX!).length > 0,
    cnameTargets: chain.targets.slice(0, CNAME_RUNAWAY),
    discoveries,
    lanes: [addressPart(by.A!, by.AAAA!)],
  };
  const records = Object.fromEntries(
    types.map((t) => [t, { outcome: by[t]!.outcome, rcode: by[t]!.rcode, data: recordsOf(by[t]!).map((r) => r.data) }]),
  );
  const selfObject: ObjectOut = {
    ...self,
    projection: {
      name,
      inScope: true,
      exists: by.A!.outcome !== 'nxdomain',
      records,
      wildcard: match,
      ...(folds.length > 0 ? { cnameWildcard: folds.map((f) => ({ name: f.object.key, wildcard: f.into.key })) } : {}),
    },
  };
  if (refusedAddresses.length > 0)
    limitations.push({
      code: 'address_not_reachable',
      message: `${name} resolves to ${refusedAddresses.slice(0, 5).join(', ')}${refusedAddresses.length > 5 ? '…' : ''}, which outbound checks may not reach (not globally reachable): no web or active check is planned for it.`,
    });
  const partial = limitations.some((l) => l.code !== 'wildcard_possible');
  return {
    status: partial ? 'partial' : 'completed',
    projection: facts as unknown as Record<string, unknown>,
    objects: [selfObject, ...found.objects],
    relations: found.relations,
    findings,
    limitations,
    sources: [DNS_SOURCE],
    ...(folds.length > 0 ? { folds } : {}),
  };
}

/**
 * How the name's address set was resolved, kept as a part of the task (as a mail task keeps its
 * lanes': CONTRACT §13): completed only when its A and AAAA questions both got an answer or an
 * authoritative denial. A CNAME whose target's servers fail answers the alias and SERVFAILs the
 * addresses: the task is partial, its address set unknown, and no address it had is gone.
 */
/** The longest the web task may use this task's addresses, in seconds (lane-web's own answer cache's bound). */
export const CARRIED_ADDRESSES_MAX_S = 300;
/** The same when a question was answered NODATA or NXDOMAIN (its negative TTL is not in the reply we keep). */
export const CARRIED_ABSENCE_MAX_S = 60;

/**
 * Until when (epoch ms) the name's addresses are the answer its A and AAAA questions would get
 * again (DnsFacts.addressesUntil): the least TTL of the two answers' records, at most
 * CARRIED_ADDRESSES_MAX_S (CARRIED_ABSENCE_MAX_S when one family is absent). Nothing when either
 * question is indeterminate (asked again, it might answer more addresses), when there is nothing
 * the guard would connect to, or when a TTL is 0.
 */
export function addressesUntil(
  a: QueryResult,
  aaaa: QueryResult,
  usable: boolean,
  now: number,
): { addressesUntil?: number } {
  if (!usable || presence(a) === 'indeterminate' || presence(aaaa) === 'indeterminate') return {};
  const absent = presence(a) === 'absent' || presence(aaaa) === 'absent';
  const ttls = [a, aaaa].flatMap((r) => (r.outcome === 'answer' ? r.answers.map((x) => x.ttl) : []));
  const s = Math.min(absent ? CARRIED_ABSENCE_MAX_S : CARRIED_ADDRESSES_MAX_S, ...ttls);
  return Number.isFinite(s) && s >= 1 ? { addressesUntil: now + Math.floor(s) * 1000 } : {};
}

function addressPart(a: QueryResult, aaaa: QueryResult): TaskPart {
  const unknown = [a, aaaa].filter((r) => presence(r) === 'indeterminate');
  if (unknown.length === 0) return { lane: ADDRESS_PART, status: 'completed' };
  return { lane: ADDRESS_PART, ...failureOf(unknown) };
}

/** The one object of a wildcard level, with what its random names answered. */
function wildcardObject(probe: WildcardProbe, distance: number): { ref: ObjectRef; object: ObjectOut } {
  const ref: ObjectRef = { type: 'host', key: `*.${probe.level}` };
  return {
    ref,
    object: {
      ...ref,
      distance,
      discovered: true,
      projection: {
        name: `*.${probe.level}`,
        wildcard: true,
        answers: Object.fromEntries(Object.entries(probe.types).map(([t, v]) => [t, v.answers])),
      },
    },
  };
}

/** A wildcard answer: one object per level, this name folded into it; nothing else. */
function collapsed(name: string, probe: WildcardProbe, distance: number, via: unknown): CheckOutput {
  const { ref: wildcard, object } = wildcardObject(probe, distance);
  const facts: DnsFacts = { name, match: 'match', addresses: [], hasMx: false, cnameTargets: [], discoveries: [] };
  return {
    status: 'completed',
    projection: facts as unknown as Record<string, unknown>,
    objects: [object],
    relations: [],
    findings: [
      scanFinding(
        'scan_wildcard_dns',
        wildcard,
        `${probe.level} answers any name with the same records (wildcard DNS).`,
        [`${name}: every record equals the wildcard's`],
      ),
    ],
    limitations: [],
    sources: [DNS_SOURCE],
    folds: [
      {
        object: { type: 'host', key: name },
        into: wildcard,
        ...(typeof via === 'string' ? { detail: { foundVia: via } } : {}),
      },
    ],
  };
}

/** The CNAME chain from `name`: targets in order, and where it loops (if it does). */
export function cnameChain(
  name: string,
  a: QueryResult,
  cname: QueryResult,
): { targets: string[]; loop: string | null } {
  const records = [...a.answers, ...cname.answers].filter((r) => r.type === 'CNAME');
  const next = new Map<string, string>();
  for (const r of records) next.set(normalName(r.name), normalName(String(r.data)));
  const targets: string[] = [];
  const seen = new Set([normalName(name)]);
  let at = normalName(name);
  while (next.has(at) && targets.length <= CNAME_RUNAWAY) {
    const t = next.get(at)!;
    if (seen.has(t)) return { targets, loop: t };
    seen.add(t);
    targets.push(t);
    at = t;
  }
  return { targets, loop: null };
}

/** Names an SPF record refers to: include, redirect, a:, mx:, exists: (macros are not names). */
export function spfNames(txt: readonly { data: unknown }[]): string[] {
  const out: string[] = [];
  for (const r of txt) {
    const value = (Array.isArray(r.data) ? r.data.join('') : String(r.data)).trim();
    if (!/^v=spf1(\s|$)/i.test(value)) continue;
    for (const term of value.split(/\s+/).slice(1)) {
      const m = /^(?:[+\-~?]?(?:include|a|mx|exists|ptr):|redirect=)([^/%\s]+)/i.exec(term);
      if (m && !m[1]!.includes('%')) out.push(normalName(m[1]!));
    }
  }
  return [...new Set(out)];
}
