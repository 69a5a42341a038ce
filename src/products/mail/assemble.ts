// Builds the job's result envelope body from the ten finished tasks (pure; the lanes through
// src/products/kit/lane-assembly.ts). Each lane's status is its task's, except where a cross-lane
// derivation lowers it (dane with no certificate to match); a lane that did not complete
// contributes null and its limitations, so null always comes with the reason. Cross-lane findings
// (./derive.ts) are returned as `derived`.
import type { AssembledOutcome, TaskOutcomeView } from '../../contract/tasks.ts';
import { laneAssembly } from '../kit/lane-assembly.ts';
import { deriveAcrossLanes } from './derive.ts';
import { mailLaneList, mailLanes, type MailLane, type MailLaneName } from './lanes.ts';
import type { MailResult } from './schema.ts';

export interface MailAssemblyOptions {
  /**
   * Lanes deliberately not run for this input (a scan profile that probes no DKIM selectors):
   * `skipped` with this reason and message, never `failed` for a missing task.
   */
  notPlanned?: Partial<Record<MailLaneName, { reason: string; message: string }>>;
}

export function assembleMail(
  domain: string,
  tasks: TaskOutcomeView[],
  opts: MailAssemblyOptions = {},
): AssembledOutcome<MailResult> {
  const assembly = laneAssembly(tasks);
  const { lanes, sources, limitations } = assembly;
  const add = (l: { code: string; message: string }) => {
    if (!limitations.some((x) => x.code === l.code && x.message === l.message)) limitations.push(l);
  };
  const part = <P>(spec: MailLane): P | null => {
    const notPlanned = opts.notPlanned?.[spec.lane as MailLaneName];
    return assembly.part<P>(spec, notPlanned ? { notPlanned } : {});
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
  for (const l of d.limitations) add(l);
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
