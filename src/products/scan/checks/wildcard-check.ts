// scan.wildcard: does a zone level answer any name? PROBE_LABELS random labels under it, each
// asked for every wildcard type, classified on answer sets (src/products/scan/rules/wildcard.ts). The names
// under the level wait for this task (their gate) and receive its projection.
import { randomBytes } from 'node:crypto';
import { indeterminateLimitation, presence } from '../../../dns/presence.ts';
import type { QueryResult } from '../../../dns/types.ts';
import type { CheckContext } from '../../kit/product-contract.ts';
import type { CheckOutput } from '../../../contract/tasks.ts';
import type { Limitation } from '../../../contract/lanes.ts';
import { notRun, resolverOf } from '../../kit/dns-replies.ts';
import { PROBE_LABELS, WILDCARD_TYPES, classifyProbe, probeLabel, type WildcardType } from '../rules/wildcard.ts';
import { normalName } from '../rules/names.ts';
import { scanFinding } from '../findings.ts';

export async function runWildcardCheck(task: { objectKey: string }, ctx: CheckContext): Promise<CheckOutput> {
  const resolver = resolverOf(ctx.runtime);
  if (!resolver)
    return notRun(
      'unavailable',
      'resolver_not_configured',
      [{ code: 'dns_unavailable', message: 'No DNS resolver is configured; the wildcard probe did not run.' }],
      [],
    );
  const level = normalName(task.objectKey);
  const labels = Array.from(
    { length: PROBE_LABELS },
    () => `${probeLabel(() => randomBytes(8).toString('hex'))}.${level}`,
  );
  const asked = await Promise.all(
    labels.flatMap((n) => WILDCARD_TYPES.map((t) => resolver.query(n, t, { signal: ctx.signal }))),
  );
  const byType = Object.fromEntries(
    WILDCARD_TYPES.map((t, ti) => [t, labels.map((_, li) => asked[li * WILDCARD_TYPES.length + ti]!)]),
  ) as Record<WildcardType, QueryResult[]>;
  const probe = classifyProbe(level, byType);
  const limitations: Limitation[] = [];
  // One limitation per indeterminate type is enough: the labels are random, the type is what matters.
  for (const t of WILDCARD_TYPES) {
    const bad = byType[t].find((r) => presence(r) === 'indeterminate');
    if (bad) limitations.push(indeterminateLimitation(bad, `wildcard probe of ${level}`));
  }
  if (probe.state === 'possible') {
    limitations.push({
      code: 'wildcard_possible',
      message: `Random names under ${level} answered with varying data (a pattern or rotating wildcard): names found under it are kept and marked as possible wildcard answers.`,
    });
  }
  const wildcardRef = { type: 'host', key: `*.${level}` };
  const isWildcard = probe.state === 'wildcard';
  return {
    status: probe.state === 'unknown' ? 'partial' : 'completed',
    projection: probe as unknown as Record<string, unknown>,
    objects: isWildcard
      ? [
          {
            ...wildcardRef,
            discovered: true,
            projection: {
              name: `*.${level}`,
              wildcard: true,
              answers: Object.fromEntries(Object.entries(probe.types).map(([t, v]) => [t, v.answers])),
            },
          },
        ]
      : [],
    relations: [],
    findings: isWildcard
      ? [
          scanFinding(
            'scan_wildcard_dns',
            wildcardRef,
            `${level} answers any name with the same records (wildcard DNS).`,
            labels.map((l) => `${l}: answered like the others`),
          ),
        ]
      : [],
    limitations,
    sources: [{ source: 'dns_resolver' }],
  };
}
