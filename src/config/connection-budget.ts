// One budget of database connections (DATABASE_MAX_CONNECTIONS) split across the roles and their
// processes (DESIGN.md, "Congestion is ours, silence is the target's"). Every process computes the
// same plan from the same settings, so no process needs to ask another what it holds: the plan is
// the deployment's, each process takes its own line of it.
//
// Each kind of process asks for what it can use (a web worker 20: requests; an orchestrator 10: its
// result batches, plans and periodic work; a lane process 50: its tasks' short statements). When
// the asks of all processes exceed the budget less the reserve, every ask is scaled down by the
// largest common proportion that fits (rounded down), but never below the kind's floor; the floors
// not fitting is a configuration error (the deployment cannot run within its budget at all).
import type { WorkerLane } from '../contract/tasks.ts';

export const WORKER_LANES: readonly WorkerLane[] = ['dns', 'mail', 'web', 'domain', 'active'];

export type ConnectionRole = 'web' | 'orchestrator' | `lane-${WorkerLane}`;
type Kind = 'web' | 'orchestrator' | 'lane';

/** What one process of a kind can use (a web process: per Express worker). */
export const CONNECTION_ASK: Readonly<Record<Kind, number>> = { web: 20, orchestrator: 10, lane: 50 };
/**
 * The least a process of a kind works with. The orchestrator is never scaled down: its few
 * processes apply every result (up to 6 batches at once beside plans, finalizing and periodic
 * work), while a lane's task takes a connection for three short statements only.
 */
export const CONNECTION_FLOOR: Readonly<Record<Kind, number>> = { web: 2, orchestrator: 10, lane: 2 };

/** The settings the plan reads (a subset of Config, so tests and tools may pass just these). */
export interface BudgetSettings {
  DATABASE_MAX_CONNECTIONS: number;
  DATABASE_RESERVED_CONNECTIONS: number;
  WEB_PROCESSES: number;
  WEB_CONCURRENCY: number;
  ORCHESTRATOR_PROCESSES: number;
  LANE_PROCESSES: Readonly<Record<WorkerLane, number>>;
}

export interface ConnectionPlan {
  budget: number;
  reserved: number;
  /** The budget less the reserve: what the roles' pools share. */
  available: number;
  /** Pool size of one process of each kind (web: of each Express worker). */
  share: Readonly<Record<Kind, number>>;
  /** Pools counted: Express workers of all web processes, orchestrators, lane processes. */
  pools: Readonly<Record<Kind, number>>;
  /** Connections all pools together may open, the reserve not included. */
  used: number;
  /** Whether the floors fit: `used` ≤ `available`. */
  fits: boolean;
}

function pools(s: BudgetSettings): Record<Kind, number> {
  return {
    web: s.WEB_PROCESSES * s.WEB_CONCURRENCY,
    orchestrator: s.ORCHESTRATOR_PROCESSES,
    lane: WORKER_LANES.reduce((n, l) => n + s.LANE_PROCESSES[l], 0),
  };
}

export function connectionPlan(s: BudgetSettings): ConnectionPlan {
  const n = pools(s);
  const available = Math.max(0, s.DATABASE_MAX_CONNECTIONS - s.DATABASE_RESERVED_CONNECTIONS);
  const kinds: Kind[] = ['web', 'orchestrator', 'lane'];
  const sharesAt = (scale: number) =>
    Object.fromEntries(
      kinds.map((k) => [k, Math.max(CONNECTION_FLOOR[k], Math.floor(CONNECTION_ASK[k] * scale))]),
    ) as Record<Kind, number>;
  const usedBy = (share: Record<Kind, number>) => kinds.reduce((t, k) => t + n[k] * share[k], 0);
  // The largest proportion of the asks that fits once the floors are kept (a floor lifted above
  // its proportion leaves less for the others, so the proportion is searched, not divided out).
  let scale = 1;
  if (usedBy(sharesAt(1)) > available) {
    let lo = 0;
    let hi = 1;
    for (let i = 0; i < 40; i++) {
      const mid = (lo + hi) / 2;
      if (usedBy(sharesAt(mid)) <= available) lo = mid;
      else hi = mid;
    }
    scale = lo;
  }
  const share = sharesAt(scale);
  const used = usedBy(share);
  return {
    budget: s.DATABASE_MAX_CONNECTIONS,
    reserved: s.DATABASE_RESERVED_CONNECTIONS,
    available,
    share,
    pools: n,
    used,
    fits: used <= available,
  };
}

function kindOf(role: ConnectionRole): Kind {
  return role === 'web' || role === 'orchestrator' ? role : 'lane';
}

/** The pool size of one process of `role` (of one Express worker for `web`). */
export function connectionShare(s: BudgetSettings, role: ConnectionRole): number {
  return connectionPlan(s).share[kindOf(role)];
}

/** One line an operator reads: who takes what, against the budget. */
export function describePlan(p: ConnectionPlan): string {
  const labels: Record<Kind, string> = { web: 'web workers', orchestrator: 'orchestrators', lane: 'lane processes' };
  const parts = (['web', 'orchestrator', 'lane'] as const)
    .filter((k) => p.pools[k] > 0)
    .map((k) => `${labels[k]} ${p.pools[k]}×${p.share[k]}`);
  return `${parts.join(' + ')} = ${p.used}, ${p.reserved} reserved, of DATABASE_MAX_CONNECTIONS=${p.budget}`;
}

/**
 * LANE_PROCESSES: how many processes run each lane role. A number (every lane), or a comma list of
 * lane=count with an optional bare number for the lanes not named: `2`, `web=3`, `1,web=3,active=0`.
 * Returns null when the text is not of that form.
 */
export function parseLaneProcesses(text: string): Record<WorkerLane, number> | null {
  let fallback = 1;
  const named: Partial<Record<WorkerLane, number>> = {};
  const parts = text
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (parts.length === 0) return null;
  let bare = 0;
  for (const part of parts) {
    const m = /^(?:([a-z]+)\s*=\s*)?(\d{1,4})$/.exec(part);
    if (!m) return null;
    const count = Number(m[2]);
    if (count > 1000) return null;
    if (m[1] === undefined) {
      if (++bare > 1) return null;
      fallback = count;
      continue;
    }
    const lane = m[1] as WorkerLane;
    if (!WORKER_LANES.includes(lane) || named[lane] !== undefined) return null;
    named[lane] = count;
  }
  return Object.fromEntries(WORKER_LANES.map((l) => [l, named[l] ?? fallback])) as Record<WorkerLane, number>;
}
