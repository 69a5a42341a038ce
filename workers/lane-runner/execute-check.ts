// Runs one check under its timeout. The outcome is always a task status: a check that throws is
// `failed` / internal_error (the message is logged, never stored: it may hold internals), one that
// overruns is `timeout`. Only a shutdown interrupts without an outcome, and a connection that
// failed for want of this process's resources (local_failure: the runner gives the task back),
// as does a check whose time ran out while one of its connections still waited in our own queue
// for a place at its address (src/net/address-slots.ts): that time was ours, not the target's.
//
// The check's pool tasks run under the check's signal, so its timeout (or a shutdown) also stops
// the thread parsing for it. A pool task past its own deadline (workers/pool/parse-pool.ts) ends
// the check `timeout` / parse_deadline_exceeded with a limitation saying what was not assessed,
// whether the check let the error through or caught it. What it returns is stored within the
// caps of src/products/kit/stored-output.ts, whatever the product.
import type { Logger } from 'pino';
import type { TaskStatus } from '../../src/db/schema.ts';
import { laneStatuses, type LaneStatus } from '../../src/contract/lanes.ts';
import type { CheckContext, CheckSpec } from '../../src/products/kit/product-contract.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import { errInfo } from '../../src/queue/stream-consumer.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';
import type { Limitation } from '../../src/contract/lanes.ts';
import { PoolDeadlineExceeded } from '../pool/pool-deadline.ts';
import { boundStoredOutput } from '../../src/products/kit/stored-output.ts';
import { answerCutLimitation, collectAnswerCuts } from '../../src/net/special-use-resolver.ts';
import { OUTBOUND_NOT_ATTEMPTED, collectLocalFailures, newWorkLedger } from '../../src/net/local-failures.ts';

/** The lane's pool as the runner hands it over: one workspace's tasks, under a signal. */
export type PoolRunner = <T>(task: string, payload: unknown, opts: { signal: AbortSignal }) => Promise<T>;

export const PARSE_DEADLINE_EXCEEDED = 'parse_deadline_exceeded';

export type CheckResult =
  | { kind: 'done'; status: TaskStatus; reason: string | null; output: CheckOutput | null; durationMs: number }
  | { kind: 'interrupted' }
  /** A connection failed for want of this process's resources (src/net/local-failures.ts): no outcome. */
  | { kind: 'local_failure'; codes: string[] };

class CheckTimeout extends Error {}
class Interrupted extends Error {}

export async function executeCheck(
  spec: CheckSpec,
  task: LaneTask,
  ctx: Omit<CheckContext, 'signal' | 'runInPool'> & { runInPool?: PoolRunner },
  shutdown: AbortSignal,
  log: Logger,
): Promise<CheckResult> {
  const ac = new AbortController();
  const pool = ctx.runInPool;
  let deadline: PoolDeadlineExceeded | null = null;
  const runInPool = pool
    ? <T>(task: string, payload: unknown) =>
        pool<T>(task, payload, { signal: ac.signal }).catch((err: unknown) => {
          if (err instanceof PoolDeadlineExceeded) deadline ??= err;
          throw err;
        })
    : undefined;
  const started = performance.now();
  const timer = setTimeout(() => ac.abort(new CheckTimeout(`check exceeded ${spec.timeoutMs} ms`)), spec.timeoutMs);
  const onShutdown = () => ac.abort(new Interrupted('shutdown'));
  shutdown.addEventListener('abort', onShutdown, { once: true });
  // The check should honour the signal; if it does not, the race still ends the wait.
  // Its connections waiting in our own queue for a place at their address when its time runs out
  // (read here, before the waits hear the abort: this listener is the signal's first) make the
  // timeout ours, not the target's (src/net/address-slots.ts).
  const ledger = newWorkLedger();
  let waitingAtAbort = 0;
  const aborted = new Promise<never>((_, reject) =>
    ac.signal.addEventListener(
      'abort',
      () => {
        waitingAtAbort = ledger.waiting;
        reject(ac.signal.reason);
      },
      { once: true },
    ),
  );
  const durationMs = () => performance.now() - started;
  try {
    // DNS answers cut where they left public DNS while the check ran (its own questions and its
    // guard's host lookups): one limitation on its output (src/net/special-use-resolver.ts).
    // Connections that failed for want of this process's resources (EMFILE…) while it ran: whatever
    // the check made of them (a chain that failed, a port that did not answer) blames the target
    // for our shortage, so it is not its outcome (src/net/local-failures.ts).
    const settled = await Promise.race([
      collectLocalFailures(
        () =>
          collectAnswerCuts(() =>
            spec.run(
              { objectKey: task.objectKey, target: task.target, params: task.params, distance: task.distance },
              { runtime: ctx.runtime, signal: ac.signal, ...(runInPool ? { runInPool } : {}) },
            ),
          ),
        ledger,
      ),
      aborted,
    ]);
    if (settled.codes.length > 0) return { kind: 'local_failure', codes: settled.codes };
    if (!settled.ok) throw settled.error;
    const { value: raw, cuts } = settled.value;
    const cut = answerCutLimitation(cuts);
    if (deadline) return deadlineResult(deadline, withLimitation(normalizeOutput(raw), cut), durationMs());
    const output = withLimitation(normalizeOutput(raw), cut);
    if (!output) {
      log.error({ check: spec.name, taskId: task.id }, 'check returned an invalid output');
      return { kind: 'done', status: 'failed', reason: 'internal_error', output: null, durationMs: durationMs() };
    }
    return { kind: 'done', status: output.status, reason: output.reason ?? null, output, durationMs: durationMs() };
  } catch (err) {
    const reason = ac.signal.aborted ? ac.signal.reason : null;
    if (reason instanceof Interrupted) return { kind: 'interrupted' };
    if (reason instanceof CheckTimeout) {
      if (waitingAtAbort > 0) return { kind: 'local_failure', codes: [...ledger.codes, OUTBOUND_NOT_ATTEMPTED] };
      return { kind: 'done', status: 'timeout', reason: 'check_timeout', output: null, durationMs: durationMs() };
    }
    if (deadline) return deadlineResult(deadline, null, durationMs());
    log.error({ check: spec.name, taskId: task.id, err: errInfo(err) }, 'check failed');
    return { kind: 'done', status: 'failed', reason: 'internal_error', output: null, durationMs: durationMs() };
  } finally {
    clearTimeout(timer);
    shutdown.removeEventListener('abort', onShutdown);
  }
}

/** `timeout`, with what the check returned (if it caught the error and went on) and the limitation. */
function deadlineResult(err: PoolDeadlineExceeded, output: CheckOutput | null, ms: number): CheckResult {
  const limitation: Limitation = {
    code: PARSE_DEADLINE_EXCEEDED,
    message: `Parsing what the target sent (${err.task}) did not finish within ${err.deadlineMs} ms: the parser was stopped and that content was not assessed.`,
  };
  const base: CheckOutput = output ?? {
    status: 'timeout',
    projection: {},
    objects: [],
    relations: [],
    findings: [],
    limitations: [],
    sources: [],
  };
  return {
    kind: 'done',
    status: 'timeout',
    reason: PARSE_DEADLINE_EXCEEDED,
    output: {
      ...base,
      status: 'timeout',
      reason: PARSE_DEADLINE_EXCEEDED,
      limitations: [...base.limitations, limitation],
    },
    durationMs: ms,
  };
}

function withLimitation(output: CheckOutput | null, limitation: Limitation | null): CheckOutput | null {
  if (!output || !limitation) return output;
  return { ...output, limitations: [...output.limitations, limitation] };
}

/** The output as it is stored: its shape checked, every field and projection within the stored caps. */
function normalizeOutput(raw: unknown): CheckOutput | null {
  if (!raw || typeof raw !== 'object') return null;
  const o = raw as Partial<CheckOutput>;
  if (!laneStatuses.includes(o.status as LaneStatus)) return null;
  const list = <T>(v: T[] | undefined): T[] => (Array.isArray(v) ? v : []);
  return boundStoredOutput({
    status: o.status as LaneStatus,
    ...(typeof o.reason === 'string' ? { reason: o.reason.slice(0, 64) } : {}),
    projection: o.projection && typeof o.projection === 'object' ? o.projection : {},
    objects: list(o.objects),
    relations: list(o.relations),
    findings: list(o.findings),
    limitations: list(o.limitations),
    sources: list(o.sources),
    ...(o.measured === true ? { measured: true } : {}),
    ...(list(o.folds).length > 0 ? { folds: list(o.folds) } : {}),
  });
}
