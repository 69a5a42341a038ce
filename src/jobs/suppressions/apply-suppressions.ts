// Suppressions applied to a job when it becomes terminal (CONTRACT §15), in the terminal
// transaction, right after the comparison's counts are written (./../estate/…: the one call
// finalize-job.ts makes). What matched is kept with the job (job_suppressions): a suppression made,
// changed or revoked later applies from the next job, and this job's pages and reports read the
// same marks for as long as it is retained.
//
// Then the counts: every finding of the job counts once, as new, unchanged, resurfaced (the
// comparison paired it with a baseline finding that was suppressed there, and it is open now) or
// suppressed; the comparison stored the resurfaced candidates (unchanged pairs suppressed in the
// baseline), and those a suppression covers now are deleted (recount). And the job's
// findingsSummary: the open findings by severity, and the suppressed count.
//
// Cost: the workspace's active suppressions (at most SUPPRESSIONS_PER_WORKSPACE) are read once and
// indexed by code and key (./suppression-key.ts); the job's findings are read in pages of
// FINDING_CHUNK by seq and each is matched in O(labels of its host). No suppression: one GROUP BY.
import type { EstateJobState } from '../inventory/estate-job.ts';
import { sql } from 'kysely';
import { parseJson, type Trx } from '../../db/transaction.ts';
import { SEVERITIES } from '../../contract/tasks.ts';
import type { FindingsSummary } from '../../contract/suppression-schemas.ts';
import { countsOf } from '../changes/change-summary.ts';
import { FINDING_RESURFACED, groupOf } from '../changes/change-codes.ts';
import { activeRules } from './suppressions-repo.ts';
import { SuppressionMatcher, type SuppressionRule } from './suppression-key.ts';

const FINDING_CHUNK = 2000;

export interface SuppressionOutcome {
  /** Findings of the job a suppression covered. */
  applied: number;
  summary: NonNullable<FindingsSummary>;
}

export interface JobForEstate {
  id: number;
  workspaceId: number;
  product: string;
}

export async function applySuppressions(
  trx: Trx,
  job: JobForEstate,
  state: Pick<EstateJobState, 'baselineJobId' | 'changes'>,
): Promise<SuppressionOutcome> {
  const rules = await activeRules(trx, job.workspaceId);
  const matcher = new SuppressionMatcher(rules, job.product);
  const open = [0, 0, 0, 0, 0];
  let applied = 0;
  if (matcher.size === 0) {
    const res = await sql<{ severity: number; n: number }>`
      SELECT severity, COUNT(*) AS n FROM findings WHERE job_id = ${job.id} GROUP BY severity`.execute(trx);
    for (const r of res.rows) open[Number(r.severity)] = (open[Number(r.severity)] ?? 0) + Number(r.n);
  } else {
    let after = 0;
    for (;;) {
      const res = await sql<{
        id: number;
        seq: number;
        public_id: string;
        code: string;
        severity: number;
        okey: string;
      }>`SELECT f.id, f.seq, f.public_id, f.code, f.severity, o.okey FROM findings f
          JOIN objects o ON o.id = f.object_id
        WHERE f.job_id = ${job.id} AND f.seq > ${after} ORDER BY f.seq LIMIT ${FINDING_CHUNK}`.execute(trx);
      const matched: Array<{ f: (typeof res.rows)[number]; r: SuppressionRule }> = [];
      for (const f of res.rows) {
        const r = matcher.match(f.code, f.okey);
        if (r) matched.push({ f, r });
        else open[Number(f.severity)] = (open[Number(f.severity)] ?? 0) + 1;
      }
      if (matched.length > 0) {
        await sql`INSERT IGNORE INTO job_suppressions (job_id, finding_id, seq, finding_ref, suppression_ref, reason, expires_at)
          VALUES ${sql.join(
            matched.map(
              ({ f, r }) =>
                sql`(${job.id}, ${f.id}, ${f.seq}, ${f.public_id}, ${r.publicId}, ${r.reason}, ${r.expiresAt})`,
            ),
          )}`.execute(trx);
        applied += matched.length;
      }
      if (res.rows.length < FINDING_CHUNK) break;
      after = Number(res.rows.at(-1)!.seq);
    }
  }
  await recount(trx, job.id, state);
  const summary: NonNullable<FindingsSummary> = {
    open: {
      critical: open[SEVERITIES.indexOf('critical')] ?? 0,
      high: open[SEVERITIES.indexOf('high')] ?? 0,
      medium: open[SEVERITIES.indexOf('medium')] ?? 0,
      low: open[SEVERITIES.indexOf('low')] ?? 0,
      info: open[SEVERITIES.indexOf('info')] ?? 0,
    },
    suppressed: applied,
  };
  await sql`UPDATE jobs SET findings_summary = ${JSON.stringify(summary)} WHERE id = ${job.id}`.execute(trx);
  return { applied, summary };
}

const NEW = groupOf('finding', 'new');

/**
 * With a comparison (jobs.changes written just before): the resurfaced pairs settled, then the
 * finding counts split into open and suppressed. Without one, nothing: changes stay null.
 *
 * The comparison stores no unchanged finding (../changes/change-codes.ts): it counted them, and
 * stored as resurfaced the unchanged pairs whose baseline finding was suppressed. Those whose
 * finding a suppression covers now are not resurfaced: deleted, they read unchanged again. Every
 * statement reads the stored rows of two groups or the job's suppressed findings, never the job's
 * findings: the terminal work stays bounded by what changed and what is suppressed.
 */
async function recount(
  trx: Trx,
  jobId: number,
  state: Pick<EstateJobState, 'baselineJobId' | 'changes'>,
): Promise<void> {
  if (state.baselineJobId === null || state.changes === null) return;
  await sql`DELETE jc FROM job_changes jc
      JOIN job_suppressions c ON c.job_id = jc.job_id AND c.finding_id = jc.finding_id
    WHERE jc.job_id = ${jobId} AND jc.grp = ${FINDING_RESURFACED}`.execute(trx);
  const groups = await sql<{ grp: number; n: number; suppressed: number }>`
    SELECT jc.grp, COUNT(*) AS n, COUNT(c.finding_id) AS suppressed FROM job_changes jc
      LEFT JOIN job_suppressions c ON c.job_id = jc.job_id AND c.finding_id = jc.finding_id
    WHERE jc.job_id = ${jobId} AND jc.grp IN (${NEW}, ${FINDING_RESURFACED}) GROUP BY jc.grp`.execute(trx);
  const all = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM job_suppressions WHERE job_id = ${jobId}`.execute(trx);
  const of = (grp: number) => groups.rows.find((g) => Number(g.grp) === grp);
  const counts = countsOf(parseJson(state.changes));
  const resurfaced = Number(of(FINDING_RESURFACED)?.n ?? 0);
  const suppressedNew = Number(of(NEW)?.suppressed ?? 0);
  // Every finding of the job was paired new or unchanged (findings sit on unfolded objects:
  // a fold moves them), so the suppressed ones that are not new are unchanged ones.
  const suppressed = Number(all.rows[0]?.n ?? 0);
  counts.findings.new -= suppressedNew;
  counts.findings.unchanged -= resurfaced + (suppressed - suppressedNew);
  counts.findings.resurfaced = resurfaced;
  counts.findings.suppressed = suppressed;
  await sql`UPDATE jobs SET changes = ${JSON.stringify(counts)} WHERE id = ${jobId}`.execute(trx);
}
