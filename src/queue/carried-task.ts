// What a lane runner needs to run a task, carried in its stream entry (issue 48 item 4: CPU per
// task). Without it a runner reads the task row (joined with its job) before claiming it: one
// statement of the three a lane spends per task. The orchestrator that inserts a pending task has
// every field at hand, so it writes them into the entry; the runner then claims the task in one
// compare-and-set (lane-task-repo.ts claimPending) and reads the row only when that claim finds
// anything but the common case (cancelled job, takeover, deliveries spent, already done).
//
// MySQL stays the truth: the claim checks the row's status, attempts and the job's status, and the
// carried fields are the row's own immutable ones (the plan as inserted). An entry without them (a
// re-enqueue by the reconciler, a released gated task, a rolling deploy) takes the old road, and a
// field that does not parse is the same as none.

/** A task's immutable fields, as inserted (tasks row, and its job's workspace and target). */
export interface CarriedTask {
  workspaceId: number;
  objectKey: string;
  check: string;
  productLane: string;
  distance: number;
  /** The params column's JSON text, exactly as inserted (null: none). */
  params: string | null;
  target: string;
}

/** The stream entry field that holds it. */
export const CARRIED_FIELD = 'run';

export function encodeCarried(c: CarriedTask): string {
  return JSON.stringify([c.workspaceId, c.objectKey, c.check, c.productLane, c.distance, c.params, c.target]);
}

/** The entry's carried fields, or null when absent or not as encodeCarried writes them. */
export function decodeCarried(fields: Record<string, string>): CarriedTask | null {
  const raw = fields[CARRIED_FIELD];
  if (raw === undefined) return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!Array.isArray(v) || v.length !== 7) return null;
  const [workspaceId, objectKey, check, productLane, distance, params, target] = v as unknown[];
  if (
    !Number.isSafeInteger(workspaceId) ||
    typeof objectKey !== 'string' ||
    typeof check !== 'string' ||
    typeof productLane !== 'string' ||
    !Number.isSafeInteger(distance) ||
    (params !== null && typeof params !== 'string') ||
    typeof target !== 'string'
  )
    return null;
  return {
    workspaceId: workspaceId as number,
    objectKey,
    check,
    productLane,
    distance: distance as number,
    params: params as string | null,
    target,
  };
}
