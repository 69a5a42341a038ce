// The CLI's gates with suppressions (CONTRACT §15): --fail-on-new ignores suppressed findings and
// counts resurfaced ones as new; --fail-on-open judges only unsuppressed findings.
import { describe, expect, it } from 'vitest';
import { lowestSeverity, withFailOnNew, withFailOnOpen } from '../../src/client/cli/job-flow.ts';
import type { CollectedChanges } from '../../src/client/change-pages.ts';
import type { Collected } from '../../src/client/page-iterator.ts';
import type { FindingPage, JobStatus } from '../../src/client/types.ts';

const sup = { suppressionId: 'sup_x', reason: 'accepted_risk' as const, expiresAt: null };
const job = (baseline: boolean) => ({ baseline: baseline ? { jobRef: 'job_b', completedAt: '' } : null }) as JobStatus;
const changes = (items: Array<Record<string, unknown>>) =>
  ({ items, findingsOmitted: false, baseline: null }) as unknown as CollectedChanges;
const findings = (items: Array<Record<string, unknown>>) => ({ items }) as unknown as Collected<FindingPage>;

describe('estate gates', () => {
  it('--fail-on-new: a suppressed new finding passes, a resurfaced one fails', () => {
    const f = (change: string, suppressed: unknown) => ({ kind: 'finding', change, severity: 'high', suppressed });
    expect(withFailOnNew('complete', job(true), changes([f('new', sup)]), null, 'medium')).toBe('complete');
    expect(withFailOnNew('complete', job(true), changes([f('resurfaced', null)]), null, 'medium')).toBe('fail_on');
    expect(withFailOnNew('complete', job(true), changes([f('new', null)]), null, 'critical')).toBe('complete');
    // No baseline: every open finding is new; a suppressed one still is not.
    const list = findings([{ severity: 'high', suppressed: sup }]);
    expect(withFailOnNew('complete', job(false), null, list, 'low')).toBe('complete');
  });

  it('--fail-on-open: only unsuppressed findings at or above the severity', () => {
    const list = findings([
      { severity: 'critical', suppressed: sup },
      { severity: 'low', suppressed: null },
    ]);
    expect(withFailOnOpen('complete', list, 'high')).toBe('complete');
    expect(withFailOnOpen('partial', list, 'low')).toBe('fail_on');
    expect(lowestSeverity('high', undefined, 'low', 'medium')).toBe('low');
    expect(lowestSeverity(undefined)).toBeUndefined();
  });
});
