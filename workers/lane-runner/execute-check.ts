// Runs one check under its timeout. The outcome is always a task status: a check that throws is
// `failed` / internal_error (the message is logged, never stored: it may hold internals), one that
// overruns is `timeout`. Only a shutdown interrupts without an outcome.
import type { Logger } from 'pino';
import type { TaskStatus } from '../../src/db/schema.ts';
import { laneStatuses, type LaneStatus } from '../../src/contract/lanes.ts';
import type { CheckContext, CheckSpec } from '../../src/products/kit/product-contract.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import { errInfo } from '../../src/queue/stream-consumer.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';

export type CheckResult =
  | { kind: 'done'; status: TaskStatus; reason: string | null; output: CheckOutput | null; durationMs: number }
  | { kind: 'interrupted' };

class CheckTimeout extends Error {}
class Interrupted extends Error {}

export async function executeCheck(
  spec: CheckSpec,
  task: LaneTask,
  ctx: Omit<CheckContext, 'signal'>,
  shutdown: AbortSignal,
  log: Logger,
): Promise<CheckResult> {
  const ac = new AbortController();
  const started = performance.now();
  const timer = setTimeout(() => ac.abort(new CheckTimeout(`check exceeded ${spec.timeoutMs} ms`)), spec.timeoutMs);
  const onShutdown = () => ac.abort(new Interrupted('shutdown'));
  shutdown.addEventListener('abort', onShutdown, { once: true });
  // The check should honour the signal; if it does not, the race still ends the wait.
  const aborted = new Promise<never>((_, reject) =>
    ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }),
  );
  const durationMs = () => performance.now() - started;
  try {
    const raw = await Promise.race([
      spec.run(
        { objectKey: task.objectKey, target: task.target, params: task.params, distance: task.distance },
        { ...ctx, signal: ac.signal },
      ),
      aborted,
    ]);
    const output = normalizeOutput(raw);
    if (!output) {
      log.error({ check: spec.name, taskId: task.id }, 'check returned an invalid output');
      return { kind: 'done', status: 'failed', reason: 'internal_error', output: null, durationMs: durationMs() };
    }
    return { kind: 'done', status: output.status, reason: output.reason ?? null, output, durationMs: durationMs() };
  } catch (err) {
    const reason = ac.signal.aborted ? ac.signal.reason : null;
    if (reason instanceof Interrupted) return { kind: 'interrupted' };
    if (reason instanceof CheckTimeout)
      return { kind: 'done', status: 'timeout', reason: 'check_timeout', output: null, durationMs: durationMs() };
    log.error({ check: spec.name, taskId: task.id, err: errInfo(err) }, 'check failed');
    return { kind: 'done', status: 'failed', reason: 'internal_error', output: null, durationMs: durationMs() };
  } finally {
    clearTimeout(timer);
    shutdown.removeEventListener('abort', onShutdown);
  }
}

function normalizeOutput(raw: unknown): CheckOutput | null {
  if (!raw || typeof raw !== 'object') return null;
  const o = raw as Partial<CheckOutput>;
  if (!laneStatuses.includes(o.status as LaneStatus)) return null;
  const list = <T>(v: T[] | undefined): T[] => (Array.isArray(v) ? v : []);
  return {
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
  };
}
