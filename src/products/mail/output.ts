// One lane's CheckOutput, built up as the check learns things. `partial(l)` records a gap (the
// lane is at best partial, and says why); objects are kept once per (type, key).
import type { CheckOutput, FindingOut, ObjectOut, ObjectRef, RelationOut } from '../../contract/tasks.ts';
import type { LaneStatus, Limitation, SourceRef } from '../../contract/lanes.ts';
import { indeterminateLimitation } from '../../dns/presence.ts';
import type { QueryResult } from '../../dns/types.ts';
import { failureOf } from '../kit/dns-replies.ts';

export const DNS_SOURCE: SourceRef = { source: 'dns_resolver' };

export class LaneOutput {
  status: LaneStatus = 'completed';
  reason: string | undefined;
  readonly objects = new Map<string, ObjectOut>();
  readonly relations: RelationOut[] = [];
  readonly findings: FindingOut[] = [];
  readonly limitations: Limitation[] = [];
  readonly sources: SourceRef[] = [DNS_SOURCE];

  partial(l: Limitation): void {
    if (this.status === 'completed') this.status = 'partial';
    this.limit(l);
  }

  /** A limitation that does not lower the status (e.g. "DNSSEC not validated locally"). */
  limit(l: Limitation): void {
    if (!this.limitations.some((x) => x.code === l.code && x.message === l.message)) this.limitations.push(l);
  }

  /** An indeterminate DNS question: the lane is at best partial, the limitation names the type. */
  indeterminate(r: QueryResult, purpose?: string): void {
    this.partial(indeterminateLimitation(r, purpose));
  }

  /** Nothing usable came back for the lane's main question: unavailable or timeout. */
  failed(results: QueryResult[], l: Limitation): void {
    const f = failureOf(results);
    this.status = f.status;
    this.reason = f.reason;
    this.limit(l);
  }

  skip(reason: string, l: Limitation): void {
    this.status = 'skipped';
    this.reason = reason;
    this.limit(l);
  }

  object(o: ObjectOut): ObjectRef {
    const key = `${o.type}\u0000${o.key}`;
    const had = this.objects.get(key);
    if (had) Object.assign(had.projection, o.projection);
    else this.objects.set(key, o);
    return { type: o.type, key: o.key };
  }

  relate(from: ObjectRef, relation: RelationOut['relation'], to: ObjectRef): void {
    if (
      !this.relations.some(
        (r) =>
          r.relation === relation &&
          r.from.key === from.key &&
          r.from.type === from.type &&
          r.to.key === to.key &&
          r.to.type === to.type,
      )
    ) {
      this.relations.push({ from, relation, to });
    }
  }

  finding(f: FindingOut): void {
    this.findings.push(f);
  }

  source(s: SourceRef): void {
    if (!this.sources.some((x) => x.source === s.source && x.version === s.version)) this.sources.push(s);
  }

  done(projection: Record<string, unknown>): CheckOutput {
    return {
      status: this.status,
      ...(this.reason ? { reason: this.reason } : {}),
      projection,
      objects: [...this.objects.values()],
      relations: this.relations,
      findings: this.findings,
      limitations: this.limitations,
      sources: this.sources,
    };
  }
}

/** The target domain object and its mail_posture object, which every lane adds its summary to. */
export function postureObjects(
  out: LaneOutput,
  domain: string,
  lane: string,
  summary: Record<string, unknown> | null,
): ObjectRef {
  const d = out.object({ type: 'domain', key: domain, distance: 0, projection: { name: domain } });
  const posture = out.object({
    type: 'mail_posture',
    key: domain,
    distance: 0,
    projection: { domain, ...(summary ? { [lane]: summary } : {}) },
  });
  out.relate(posture, 'discovered_from', d);
  return posture;
}
