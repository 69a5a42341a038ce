// Builds the job's result envelope body from the ten finished tasks (pure). Each lane's status
// is its task's, except where a cross-lane derivation lowers it (dane with no certificate to
// match); a lane that did not complete contributes null and its limitations, so null always
// comes with the reason. Cross-lane findings (./derive.ts) are returned as `derived`.
import type { AssembledOutcome, TaskOutcomeView } from '../../contract/tasks.ts';
import type { LaneOutcome, Limitation, SourceRef } from '../../contract/lanes.ts';
import { laneOutcome } from '../../contract/lanes.ts';
import { deriveAcrossLanes } from './derive.ts';
import { mailLaneList, mailLanes, type MailLane } from './lanes.ts';
import type { MailResult } from './schema.ts';

const CONTRIBUTES = new Set(['completed', 'partial']);

export function assembleMail(domain: string, tasks: TaskOutcomeView[]): AssembledOutcome<MailResult> {
  const lanes: LaneOutcome[] = [];
  const sources: SourceRef[] = [];
  const limitations: Limitation[] = [];
  const add = <T extends { code?: string; source?: string; message?: string; version?: string }>(list: T[], x: T) => {
    if (!list.some((y) => JSON.stringify(y) === JSON.stringify(x))) list.push(x);
  };
  const part = <P>(spec: MailLane): P | null => {
    const task = tasks.find((t) => t.productLane === spec.lane);
    if (!task) {
      lanes.push(laneOutcome(spec, 'failed', { reason: 'task_missing' }));
      add(limitations, {
        code: `${spec.lane}_failed`,
        message: `The ${spec.lane} lane left no outcome; its part of the result is null.`,
      });
      return null;
    }
    const reason = task.reason ?? task.output?.reason;
    lanes.push(laneOutcome(spec, task.status, reason ? { reason } : {}));
    for (const s of task.output?.sources ?? []) add(sources, s);
    const own = task.output?.limitations ?? [];
    for (const l of own) add(limitations, l);
    if (task.output && CONTRIBUTES.has(task.status)) return structuredClone(task.output.projection) as P;
    if (own.length === 0)
      add(limitations, {
        code: `${spec.lane}_${task.status}`,
        message: `The ${spec.lane} lane ended ${task.status}${reason ? ` (${reason})` : ''}; its part of the result is null.`,
      });
    return null;
  };
  const result: MailResult = {
    domain,
    mx: part(mailLanes.mx),
    spf: part(mailLanes.spf),
    dmarc: part(mailLanes.dmarc),
    mtaSts: part(mailLanes.mta_sts),
    tlsRpt: part(mailLanes.tls_rpt),
    dkim: part(mailLanes.dkim),
    bimi: part(mailLanes.bimi),
    dane: part(mailLanes.dane),
    smtpStarttls: part(mailLanes.smtp_starttls),
    zone: part(mailLanes.zone),
  };
  const dmarcLane = lanes.find((l) => l.lane === 'dmarc');
  const d = deriveAcrossLanes({
    domain,
    dane: result.dane,
    smtp: result.smtpStarttls,
    mtaSts: result.mtaSts,
    bimi: result.bimi,
    dmarc: result.dmarc,
    dmarcAnswered: dmarcLane?.status === 'completed' || dmarcLane?.status === 'partial',
    tlsRpt: result.tlsRpt,
  });
  for (const l of d.limitations) add(limitations, l);
  for (const name of d.partialLanes) {
    const lane = lanes.find((l) => l.lane === name);
    if (lane?.status === 'completed') lane.status = 'partial';
  }
  // Lanes in the declared order, whatever order the tasks came in.
  lanes.sort(
    (a, b) => mailLaneList.findIndex((l) => l.lane === a.lane) - mailLaneList.findIndex((l) => l.lane === b.lane),
  );
  return { result, lanes, sources, limitations, ...(d.derived.length > 0 ? { derived: d.derived } : {}) };
}
