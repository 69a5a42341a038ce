// A product's readiness (CONTRACT §12): its own lanes' readiness and, for async products, the
// liveness of the orchestrator and of the worker lanes that run its checks (alive, or restarting
// within LANE_RESTART_GRACE_MS).
import type { LaneReadiness, ProductReadiness } from '../../contract/lanes.ts';
import type { ProductDefinition, ProductRuntime } from './product-contract.ts';

/**
 * The product's own lane readiness, and for async products the liveness of the orchestrator and
 * of the worker lanes that run its checks: without them every lane is `down`, however well
 * configured (an accepted job would wait, not run).
 */
export function laneReadiness(def: ProductDefinition, runtime: ProductRuntime): Record<string, LaneReadiness> {
  if (!def.execute && !def.job) return Object.fromEntries(def.lanes.map((l) => [l.lane, 'not_built' as const]));
  const own = def.readiness(runtime);
  if (!def.job) return own;
  const liveness = runtime.services.laneHealth;
  // A worker being restarted (within LANE_RESTART_GRACE_MS) still counts: the stream keeps the work.
  const workersUp = liveness
    ? liveness.accepting('orchestrator') && def.job.workerLanes.every((l) => liveness.accepting(l))
    : false;
  if (workersUp) return own;
  return Object.fromEntries(
    def.lanes.map((l) => [
      l.lane,
      (own[l.lane] ?? 'not_built') === 'ready' ? ('down' as const) : (own[l.lane] ?? 'not_built'),
    ]),
  );
}

export function productReadiness(def: ProductDefinition, runtime: ProductRuntime): ProductReadiness {
  const lanes = laneReadiness(def, runtime);
  let partial = false;
  for (const spec of def.lanes) {
    const r = lanes[spec.lane] ?? 'not_built';
    if (r === 'ready') continue;
    if (spec.required) return 'unavailable';
    partial = true;
  }
  return partial ? 'partially_configured' : 'available';
}
