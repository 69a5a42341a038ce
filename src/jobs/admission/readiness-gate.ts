// Step 9: readiness. A product that is not built, or whose required lanes are not ready, is refused
// with its unavailable code; so is an input that needs a worker lane with no consumer alive within
// LANE_RESTART_GRACE_MS. The log line of the 503 says which lane and why (never the reply); the
// refusal carries Retry-After when the blocking dependency says when it may change (CONTRACT §3:
// the resolver breaker's next probe, a down lane's heartbeat interval; none for what will not
// change by itself), rendered by the one error handler.
import { ApiError } from '../../contract/errors.ts';
import { laneReadiness, productReadiness, readinessRetryAfterMs } from '../../products/kit/readiness.ts';
import type { ProductDefinition, ProductRuntime } from '../../products/kit/product-contract.ts';

export function assertReady(def: ProductDefinition, runtime: ProductRuntime, input: unknown): void {
  const code = def.id.startsWith('scan.') ? 'scan_profile_unavailable' : 'capability_unavailable';
  const retryAfter = (down: readonly string[] = []) => {
    const ms = readinessRetryAfterMs(def, runtime, down);
    return ms === undefined ? {} : { retryAfterSeconds: ms / 1000 };
  };
  if ((!def.execute && !def.job) || productReadiness(def, runtime) === 'unavailable') {
    throw new ApiError(code, { details: { product: def.id }, cause: notReadyCause(runtime, def), ...retryAfter() });
  }
  // An input may need more worker lanes than the product's minimum (a scan profile's web lane).
  const needed = def.job?.lanesFor?.(input) ?? [];
  if (needed.length === 0) return;
  const liveness = runtime.services.laneHealth;
  // A lane restarting within LANE_RESTART_GRACE_MS still takes the job: its stream keeps it.
  const down = needed.filter((l) => !liveness?.accepting(l));
  if (down.length > 0) {
    throw new ApiError(code, {
      details: { product: def.id },
      cause: `no lane-${down.join(', lane-')} worker alive within the restart grace for this input`,
      ...retryAfter(down),
    });
  }
}

/** "required lane dns_delegation: down (no orchestrator or lane-domain worker alive within the restart grace, …)". */
function notReadyCause(runtime: ProductRuntime, def: ProductDefinition): string {
  if (!def.execute && !def.job) return 'product not built';
  const lanes = laneReadiness(def, runtime);
  const blocking = def.lanes.filter((l) => l.required && lanes[l.lane] !== 'ready');
  return (
    blocking
      .map((l) => {
        const r = lanes[l.lane] ?? 'not_built';
        const why =
          r === 'down' && def.job
            ? ` (no orchestrator or lane-${def.job.workerLanes.join('/lane-')} worker alive within the restart grace, or its dependency is down)`
            : '';
        return `required lane ${l.lane}: ${r}${why}`;
      })
      .join('; ') || 'unavailable'
  );
}
