// mail.dkim: probes the documented selectors (./dkim-selectors.ts) plus those inferred from the MX
// hosts and SPF includes, at most 10 questions at a time. Each key found is parsed in the pool
// (./dkim-key.ts). The lane is at best `partial`: selectors cannot be enumerated, so finding none
// is never reported as "no DKIM" (there is no such finding).
import { presence } from '../../dns/presence.ts';
import type { QueryResult } from '../../dns/types.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { txtValues, type DnsAsker } from './dns-snapshot.ts';
import { selectorsFor } from './dkim-selectors.ts';
import { mailFinding } from './findings.ts';
import { mxSet } from './mx-hosts.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { UNOBSERVED } from '../kit/change-rules.ts';
import { inPool } from './pool.ts';
import type { DkimProjection } from './schema.ts';

const CONCURRENCY = 10;
const DKIM_LIKE = /(^|;)\s*(v\s*=\s*DKIM1|p\s*=|k\s*=)/i;

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

export async function runDkimCheck(domain: string, asker: DnsAsker, ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const [mx, txt] = await Promise.all([mxSet(asker, domain), asker.ask(domain, 'TXT')]);
  const spf = txtValues(txt).find((v) => /^v=spf1(?: |$)/i.test(v)) ?? '';
  const includes = [...spf.matchAll(/(?:^| )[+\-~?]?include:([^ ]+)/gi)].map((m) =>
    m[1]!.toLowerCase().replace(/\.$/, ''),
  );
  const probes = selectorsFor(
    mx.hosts.map((h) => h.name),
    includes,
  );
  out.partial({
    code: 'dkim_selectors_not_enumerable',
    message: `DKIM selectors cannot be listed: ${probes.length} common and provider selectors were probed; a key under any other selector is not seen, so finding none does not mean the domain does not sign.`,
  });
  const replies = await mapLimit(probes, CONCURRENCY, (p) => asker.ask(`${p.selector}._domainkey.${domain}`, 'TXT'));
  const selectors: DkimProjection['selectors'] = [];
  const unknown: QueryResult[] = [];
  for (const [i, p] of probes.entries()) {
    const r = replies[i]!;
    const pr = presence(r);
    if (pr === 'indeterminate') unknown.push(r);
    const isKey = pr === 'present' && txtValues(r).some((v) => DKIM_LIKE.test(v));
    if (!isKey) continue;
    const key = await inPool(ctx, 'mailDkimKey', { name: r.name, snapshot: { [`${r.name}|TXT`]: r } });
    selectors.push({ selector: p.selector, source: p.source, ...key });
  }
  if (unknown.length === probes.length) {
    out.failed(unknown, { code: 'dkim_unknown', message: `No DKIM selector probe for ${domain} got a usable reply.` });
  } else if (unknown.length > 0) {
    out.partial({
      code: 'dns_indeterminate',
      message: `${unknown.length} DKIM selector probe(s) got no usable reply (${unknown
        .slice(0, 5)
        .map((r) => r.name)
        .join(', ')}): those selectors are unknown.`,
    });
  }
  // A selector whose probe got no answer may hold a key: the list found is then no observation.
  postureObjects(out, domain, 'dkim', {
    found: selectors.map((s) => s.selector),
    ...(unknown.length > 0 ? { [UNOBSERVED]: true } : {}),
  });
  for (const s of selectors) {
    const ref = out.object({
      type: 'host',
      key: s.name,
      distance: 1,
      projection: {
        name: s.name,
        dkimSelector: s.selector,
        keyType: s.keyType,
        bits: s.bits,
        state: s.state,
        testing: s.testing,
      },
    });
    out.relate(ref, 'discovered_from', { type: 'domain', key: domain });
    const ev = [`TXT ${s.name}`];
    if (s.state === 'revoked')
      out.finding(
        mailFinding(
          'dkim_key_revoked',
          ref,
          `The DKIM key at selector ${s.selector} of ${domain} is revoked (empty p=).`,
          ev,
        ),
      );
    if (s.state === 'invalid')
      out.finding(
        mailFinding(
          'dkim_key_invalid',
          ref,
          `The DKIM key record at selector ${s.selector} of ${domain} is unusable: ${s.error}.`,
          ev,
        ),
      );
    if (s.state === 'key' && s.keyType === 'rsa' && s.bits !== null && s.bits < 2048) {
      out.finding(
        mailFinding(
          'dkim_key_weak',
          ref,
          `The DKIM key at selector ${s.selector} of ${domain} is RSA ${s.bits} bits.`,
          ev,
        ),
      );
    }
    if (s.testing)
      out.finding(
        mailFinding(
          'dkim_key_testing',
          ref,
          `The DKIM key at selector ${s.selector} of ${domain} is in test mode (t=y).`,
          ev,
        ),
      );
  }
  return out.done({
    domain,
    probed: probes.length,
    probes: probes.map((p) => p.selector),
    selectors,
  } satisfies DkimProjection);
}
