// The products' findings factory. Each product declares its finding kinds once (a table of
// FindingKind rows, the source of docs/findings.md and the catalog); a check names a code, the
// object and what it saw. Summaries and evidence are capped: they often quote target text.
import type { FindingOut, ObjectRef, Severity } from '../../contract/tasks.ts';

export interface FindingKind {
  code: string;
  severity: Severity;
  confidence: FindingOut['confidence'];
  title: string;
  /** When it is raised; what never raises it. */
  description: string;
}

const SUMMARY_MAX = 1000;
const EVIDENCE_MAX_ITEMS = 20;
const EVIDENCE_MAX_CHARS = 500;

export type FindingFactory<C extends string> = (
  code: C,
  object: ObjectRef,
  summary: string,
  evidence?: string[],
) => FindingOut;

/** The finding builder of one product's table. */
export function findingFactory<T extends Record<string, FindingKind>>(kinds: T): FindingFactory<keyof T & string> {
  return (code, object, summary, evidence = []) => {
    const k = kinds[code]!;
    return {
      code: k.code,
      severity: k.severity,
      confidence: k.confidence,
      title: k.title,
      summary: summary.slice(0, SUMMARY_MAX),
      object,
      ...(evidence.length
        ? { evidence: evidence.slice(0, EVIDENCE_MAX_ITEMS).map((e) => ({ summary: e.slice(0, EVIDENCE_MAX_CHARS) })) }
        : {}),
    };
  };
}
