// Settings of the stream workers (lanes and orchestrator), parsed from the environment once at
// start like src/config/config.ts. They live here rather than in configSchema because only the worker
// roles read them; the web role must not fail on them.
import { z } from 'zod';
import { ConfigError } from '../config/config.ts';

const int = (min: number, max: number, def: number) => z.coerce.number().int().min(min).max(max).default(def);

export const queueSettingsSchema = z.object({
  LANE_VISIBILITY_MS: int(100, 3_600_000, 30_000).describe(
    'Idle time after which a delivered entry is reclaimed from its consumer',
  ),
  LANE_MAX_DELIVERIES: int(1, 1000, 5).describe('Deliveries after which an entry is dead-lettered'),
  LANE_POOL_THREADS: int(0, 256, 2).describe('piscina threads for CPU-heavy parsing (0 = parse inline)'),
  LANE_POOL_DEADLINE_MS: int(0, 600_000, 0).describe(
    "Deadline of every parse-pool task once started (0 = each task's own: 5000 for a web page, 2000 for the rest)",
  ),
  LANE_CONCURRENCY: int(1, 10_000, 256).describe(
    "A lane process's capacity: the most checks it runs at once, shared max-min fairly between the workspaces with work (one alone may use all of it)",
  ),
  LANE_LAG_TARGET_MS: int(0, 10_000, 15).describe(
    'Event-loop lag p99 (ms, per 250 ms window, the 10 ms sampling included) over which a lane process runs fewer checks at once (0 = always LANE_CONCURRENCY)',
  ),
  LANE_CONCURRENCY_FLOOR: int(1, 10_000, 64).describe(
    'The fewest checks at once the lag target may bring a lane process down to (at most LANE_CONCURRENCY): enough to keep checks that wait on the network in flight',
  ),
});

export type QueueSettings = Readonly<z.infer<typeof queueSettingsSchema>>;

/**
 * A lane's own default capacity where LANE_CONCURRENCY is not set: the web lane's checks each hold
 * a page, its evidence and its assessment, so 128 of them keep lane-web under 256 MB of RSS
 * (test/bench/scan.ts); the other lanes hold little per check.
 */
export function laneDefaults(lane: string, env: NodeJS.ProcessEnv = process.env): Partial<QueueSettings> {
  return lane === 'web' && env.LANE_CONCURRENCY === undefined ? { LANE_CONCURRENCY: 128 } : {};
}

export function parseQueueSettings(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<QueueSettings> = {},
): QueueSettings {
  const picked = Object.fromEntries(Object.keys(queueSettingsSchema.shape).map((k) => [k, env[k]]));
  const result = queueSettingsSchema.safeParse(picked);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return Object.freeze({ ...result.data, ...overrides });
}
