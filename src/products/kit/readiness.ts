// A product's readiness (CONTRACT §12): its own lanes' readiness and, for async products, the
// liveness of the orchestrator and of the worker lanes that run its checks (alive, or restarting
// within LANE_RESTART_GRACE_MS). And, when it refuses, when that may change (CONTRACT §3: the
// Retry-After of its 503).
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

/**
 * The Retry-After of a refusal because a worker lane (or the orchestrator) is down past its restart
 * grace. Nothing probes a process that is gone: it comes back when something restarts it, and then
 * heartbeats at once (and every 5 s), which the web role reads every 2 s. Five seconds is one
 * heartbeat interval: a client retrying then sees a returned lane, without polling every second
 * for an outage that may last minutes.
 */
export const LANE_DOWN_RETRY_AFTER_MS = 5000;

/**
 * Every dependency breaker probes about once a second (src/resilience/breaker.ts): the wait for a
 * `down` lane whose dependency does not say when its next probe is.
 */
const BREAKER_PROBE_MS = 1000;

/**
 * When a product refused at readiness may be ready again, in ms: the latest of what blocks it —
 * the resolver breaker's next probe (Resolver.retryAfterMs) for a lane that is `down` on its own,
 * LANE_DOWN_RETRY_AFTER_MS for a worker lane or orchestrator down past its grace (`downWorkerLanes`:
 * the extra worker lanes this input needs that are down). Undefined when a blocking lane will not
 * change by itself (`unconfigured`, `not_built`): no Retry-After is better than a false one.
 */
export function readinessRetryAfterMs(
  def: ProductDefinition,
  runtime: ProductRuntime,
  downWorkerLanes: readonly string[] = [],
): number | undefined {
  if (!def.execute && !def.job) return undefined;
  const lanes = laneReadiness(def, runtime);
  const blocking = def.lanes.filter((l) => l.required && (lanes[l.lane] ?? 'not_built') !== 'ready');
  if (blocking.some((l) => lanes[l.lane] !== 'down')) return undefined;
  const waits: number[] = [];
  const own = def.readiness(runtime);
  if (blocking.some((l) => own[l.lane] === 'down')) {
    waits.push(runtime.services.resolver?.retryAfterMs?.() ?? BREAKER_PROBE_MS);
  }
  const liveness = runtime.services.laneHealth;
  const job = def.job;
  const workersDown =
    job !== undefined &&
    (downWorkerLanes.length > 0 ||
      !liveness?.accepting('orchestrator') ||
      job.workerLanes.some((l) => !liveness.accepting(l)));
  if (workersDown) waits.push(LANE_DOWN_RETRY_AFTER_MS);
  return waits.length > 0 ? Math.max(...waits) : undefined;
}
