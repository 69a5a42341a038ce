// The monitor scheduler, in the orchestrator role (CONTRACT §14). Every orchestrator runs it; the
// claim (monitor-runs.ts: FOR UPDATE SKIP LOCKED, a unique run per monitor and due time) makes
// each due run start once however many run. A claimed run is then decided:
//   - the monitor was paused or deleted meanwhile: the run is dropped (it never ran);
//   - its last job is not terminal: skipped, previous_run_active (runs never overlap);
//   - otherwise it is admitted exactly as the product's route would admit it for the monitor's key
//     (src/jobs/admission/: the four checks, product limits, readiness, credits reserved,
//     dispatch; not the application's per-minute request limit), its run row written `started`
//     in the job's own transaction; a refusal is recorded skipped with the error's code and no
//     job, and its monitor.run_skipped event written in the same transaction;
//   - a retryable refusal (a rate limit, capability_unavailable, service_unavailable: 429 or 503)
//     is deferred first: tried again after its Retry-After (or a doubling back-off), with jitter,
//     for as long as the retry falls inside the run's interval; only then is it skipped. A run
//     that starts late moves its monitor's phase (recordStarted), so monitors created together
//     spread out: 20 scan monitors under a 10/min limit all run every hour;
//   - the key the monitor runs as was revoked (or moved): the monitor is paused with pausedReason
//     key_revoked, its one run_skipped event written with it; no run after (resuming binds it to
//     the key that resumes it).
// An unexpected failure (MySQL unreachable) leaves the run claimed; any orchestrator picks it up
// again after CLAIM_STALE_MS. Runs are decided at MONITOR_STARTS_PER_SECOND at most per
// orchestrator: a thousand runs due in the same second start over the next twenty, rather than
// taking both cores of a small host from the requests it answers meanwhile (bench:monitors).
import type { Logger } from 'pino';
import type { Principal } from '../../auth/principal.ts';
import { findPrincipalByKeyId } from '../../auth/keys-repo.ts';
import type { Config } from '../../config/config.ts';
import { ApiError, errorRegistry, type ErrorCode } from '../../contract/errors.ts';
import { publicId } from '../../contract/ids.ts';
import type { Db } from '../../db/database.ts';
import { TERMINAL_STATUSES, type JobStatus } from '../../db/schema.ts';
import type { RateLimiter } from '../../ratelimit/limiter.ts';
import type { RedisClient } from '../../redis/client.ts';
import type { ProductDefinition, ProductRuntime } from '../../products/kit/product-contract.ts';
import { sql } from 'kysely';
import { ProductAdmission } from '../admission/admit-product.ts';
import { silentPort } from '../admission/admission-port.ts';
import type { AdmissionState } from '../admission/admission-state.ts';
import {
  claimDueRuns,
  deferRun,
  dropRun,
  MonitorWithdrawn,
  RunAlreadyDecided,
  recordSkipped,
  recordStarted,
  refreshClaim,
  staleClaims,
  type ClaimedRun,
} from './monitor-runs.ts';
import { toMonitorRow, type MonitorRow } from './monitors-repo.ts';
import type { MonitorMetrics } from './monitor-metrics.ts';

export interface MonitorSchedulerDeps {
  db: Db;
  redis: RedisClient;
  log: Logger;
  config: Config;
  /** The orchestrator's product runtime, with worker liveness (readiness is admission's step 9). */
  runtime: ProductRuntime;
  limiter: RateLimiter;
  /** The async products this orchestrator owns: only their monitors are claimed here. */
  products: ReadonlyMap<string, ProductDefinition>;
  metrics?: MonitorMetrics;
}

export interface MonitorSchedulerOptions {
  /** Runs claimed per transaction. */
  batch?: number;
  /** Runs decided at once (each: a Redis script and a MySQL transaction). */
  concurrency?: number;
  /** Runs decided per second at most (default MONITOR_STARTS_PER_SECOND). */
  perSecond?: number;
}

export class MonitorScheduler {
  readonly #deps: MonitorSchedulerDeps;
  readonly #batch: number;
  readonly #concurrency: number;
  readonly #admissions = new Map<string, ProductAdmission<unknown>>();
  readonly #intervalMs: number;
  /** When the next run may be decided (performance.now()): starts are paced, not burst. */
  #nextSlot = 0;

  constructor(deps: MonitorSchedulerDeps, opts: MonitorSchedulerOptions = {}) {
    this.#deps = deps;
    this.#intervalMs = 1000 / (opts.perSecond ?? deps.config.MONITOR_STARTS_PER_SECOND);
    // A claimed batch is decided before the next is claimed: at the paced rate it is held a few
    // seconds, far below CLAIM_STALE_MS.
    this.#batch = opts.batch ?? Math.max(1, Math.min(200, Math.ceil(10_000 / this.#intervalMs)));
    this.#concurrency = opts.concurrency ?? 16;
  }

  /** Waits for this run's slot: MONITOR_STARTS_PER_SECOND spreads a burst of due runs out. */
  async #pace(): Promise<void> {
    const now = performance.now();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + this.#intervalMs;
    if (slot > now) await new Promise((r) => setTimeout(r, slot - now));
  }

  /** Claims and decides every run due now (and any left claimed by a dead orchestrator). */
  async tick(): Promise<number> {
    // One principal read per key per tick: a thousand monitors of one key cost one query.
    const principals = new Map<number, Promise<Principal | null>>();
    const ids = [...this.#deps.products.keys()];
    let decided = 0;
    for (;;) {
      const claimed = await claimDueRuns(this.#deps.db, this.#batch, ids);
      await this.#decideAll(claimed, principals);
      decided += claimed.length;
      if (claimed.length < this.#batch) break;
    }
    const stale = await staleClaims(this.#deps.db, this.#batch, ids);
    const mine: ClaimedRun[] = [];
    for (const run of stale) if (await refreshClaim(this.#deps.db, run.runId)) mine.push(run);
    await this.#decideAll(mine, principals);
    return decided + mine.length;
  }

  async #decideAll(runs: ClaimedRun[], principals: Map<number, Promise<Principal | null>>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < runs.length) {
        const run = runs[next++]!;
        await this.#pace();
        try {
          await this.#decide(run, principals);
        } catch (err) {
          this.#deps.log.warn(
            { err: { message: (err as Error).message }, monitorRun: run.runId },
            'monitor run left claimed: retried after the claim goes stale',
          );
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, runs.length) }, worker));
  }

  async #decide(run: ClaimedRun, principals: Map<number, Promise<Principal | null>>): Promise<void> {
    const { db } = this.#deps;
    const res = await sql<Record<string, unknown>>`
      SELECT m.*, j.status AS last_job_status FROM monitors m LEFT JOIN jobs j ON j.id = m.last_job_id
      WHERE m.id = ${run.monitorId}`.execute(db);
    const raw = res.rows[0];
    const m: MonitorRow | null = raw ? toMonitorRow(raw) : null;
    if (!m || m.deleted_at !== null || m.paused) {
      await dropRun(db, run);
      return;
    }
    const lastStatus = (raw!.last_job_status as JobStatus | null) ?? null;
    if (lastStatus !== null && !TERMINAL_STATUSES.includes(lastStatus)) {
      return this.#skip(run, 'previous_run_active');
    }
    const def = this.#deps.products.get(m.product);
    if (!def) return this.#refused(run, m, 'capability_unavailable', undefined);
    let pending = principals.get(m.api_key_id);
    if (!pending) {
      pending = findPrincipalByKeyId(db, m.api_key_id);
      principals.set(m.api_key_id, pending);
    }
    const principal = await pending;
    // A revoked key admits nothing, its monitors' runs included: paused, one event, none after.
    if (!principal || principal.workspaceId !== m.workspace_id) return this.#skip(run, 'key_revoked', undefined, true);
    const st: AdmissionState = { requestId: publicId('req'), log: this.#deps.log, principal, rawBody: m.request };
    try {
      await this.#admission(m.product).admit(st, def.path, null, {
        within: (trx, job) => recordStarted(trx, run, job.jobId),
      });
      this.#deps.metrics?.runs.inc({ outcome: 'started' });
    } catch (err) {
      if (err instanceof MonitorWithdrawn) return dropRun(db, run);
      if (err instanceof RunAlreadyDecided) return;
      if (err instanceof ApiError) return this.#refused(run, m, err.code, err.retryAfterSeconds, err.logCause);
      throw err;
    }
  }

  /** A refusal: deferred while a retryable one can still be tried within the run's interval, else skipped. */
  async #refused(
    run: ClaimedRun,
    m: MonitorRow,
    code: ErrorCode,
    retryAfterSeconds: number | undefined,
    cause?: string,
  ): Promise<void> {
    const spec = errorRegistry[code];
    if (spec.retryable && (spec.status === 429 || spec.status === 503)) {
      const retryAt = deferredUntil(run, m.interval_seconds, retryAfterSeconds, Date.now());
      if (retryAt !== null) {
        if (await deferRun(this.#deps.db, run, retryAt, code)) {
          this.#deps.metrics?.runs.inc({ outcome: 'deferred' });
          this.#deps.log.info(
            { monitorRun: run.runId, code, retryAt: retryAt.toISOString(), ...(cause ? { cause } : {}) },
            'monitor run deferred',
          );
        }
        return;
      }
    }
    return this.#skip(run, code, cause);
  }

  async #skip(run: ClaimedRun, code: string, cause?: string, pauseForRevokedKey = false): Promise<void> {
    if (await recordSkipped(this.#deps.db, run, code, pauseForRevokedKey ? 'key_revoked' : undefined)) {
      this.#deps.metrics?.runs.inc({ outcome: 'skipped' });
      this.#deps.log.info({ monitorRun: run.runId, code, ...(cause ? { cause } : {}) }, 'monitor run skipped');
    }
  }

  #admission(product: string): ProductAdmission<unknown> {
    let a = this.#admissions.get(product);
    if (!a) {
      const { config, db, redis, limiter, runtime } = this.#deps;
      a = new ProductAdmission({ config, db, redis, limiter, runtime }, this.#deps.products.get(product)!, silentPort, {
        caller: 'monitor',
      });
      this.#admissions.set(product, a);
    }
    return a;
  }
}

/** The first wait of a deferred run without a Retry-After; it doubles with each deferral. */
const DEFER_BASE_SECONDS = 5;
/** The longest wait between two tries of a deferred run. */
const DEFER_MAX_SECONDS = 900;

/**
 * When a run refused for a retryable reason is tried again: after the refusal's Retry-After (or a
 * back-off doubling from 5 s, at most 15 min; the longer of the two from the fourth try), plus up to half of it again at random, so that runs
 * refused together are not tried together; null when that is not before the run's next due time
 * (its interval is over: the run is skipped).
 */
export function deferredUntil(
  run: Pick<ClaimedRun, 'dueAt' | 'deferrals'>,
  intervalSeconds: number,
  retryAfterSeconds: number | undefined,
  now: number,
  random: () => number = Math.random,
): Date | null {
  const backoff = Math.min(DEFER_MAX_SECONDS, DEFER_BASE_SECONDS * 2 ** Math.min(run.deferrals, 16));
  // The service's own Retry-After is exact (CONTRACT §5) and is followed as is for a few tries; a
  // refusal that goes on is then spaced by the back-off too.
  const wait =
    Math.max(retryAfterSeconds ?? 0, retryAfterSeconds === undefined || run.deferrals >= 3 ? backoff : 0) * 1000;
  const at = now + wait + Math.floor(random() * (wait / 2));
  return at < run.dueAt.getTime() + intervalSeconds * 1000 ? new Date(at) : null;
}
