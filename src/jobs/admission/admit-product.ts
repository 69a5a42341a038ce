// The admission of one product request, transport-free (DESIGN.md, layer 5): the steps of
// CONTRACT §2 from the scope check on, in its order — scope → rate limits (+ the Idempotency-Key
// lease, one Redis script) → Idempotency-Key → body → validation → active gates → product limit →
// idempotency state → readiness → (credits reserved and the job accepted, then dispatch) or the
// inline execution. The Express chain (src/routes/product-routes.ts) calls it after it has
// authenticated the Bearer key and read the body; the monitor scheduler (src/jobs/monitors/) calls
// it with the monitor's key and stored request, without the application's per-minute limit and
// without an Idempotency-Key (its run row makes each due run start once). One copy of the rules.
import type { Config } from '../../config/config.ts';
import { ApiError } from '../../contract/errors.ts';
import { buildEnvelope } from '../../contract/envelope.ts';
import type { Db } from '../../db/database.ts';
import type { Trx } from '../../db/transaction.ts';
import type { Idempotency } from '../../idempotency/idempotency.ts';
import type { RateLimiter } from '../../ratelimit/limiter.ts';
import type { RedisClient } from '../../redis/client.ts';
import type { ProductDefinition, ProductRuntime } from '../../products/kit/product-contract.ts';
import { boundInlineEnvelope } from '../../products/kit/inline-output.ts';
import { admissionOutcomes, creditsReserved, laneOutcomes, productExecutions } from '../../metrics.ts';
import { publishJob } from '../../queue/streams.ts';
import { answerCutLimitation, collectAnswerCuts } from '../../net/special-use-resolver.ts';
import { acceptJob, CommittedElsewhere, markOutboxPublished, type Accepted } from '../jobs-repo.ts';
import type { AdmissionState } from './admission-state.ts';
import type { AdmissionPort } from './admission-port.ts';
import { assertActiveAllowed } from './active-gates.ts';
import { Deadlines } from './deadlines.ts';
import {
  answerCommittedElsewhere,
  commitReply,
  SerializedBody,
  decideIdempotency,
  endClaim,
  requireIdempotencyKey,
  sendReplay,
} from './idempotency-step.ts';
import { checkProductInput, reportBodyError, validateInput } from './input-validation.ts';
import { assertReady } from './readiness-gate.ts';
import { reportDeferredLimit, WriteLimits } from './write-limits.ts';

/** What admission needs of the process (the web role's AppDeps has it all). */
export interface AdmissionDeps {
  config: Config;
  db: Db;
  redis: RedisClient;
  limiter: RateLimiter;
  /** Absent where requests carry no Idempotency-Key (the monitor scheduler). */
  idempotency?: Idempotency;
  runtime: ProductRuntime;
}

export interface ProductAdmissionOptions {
  /**
   * API requests: the application's per-minute limit applies and an Idempotency-Key is required
   * (CONTRACT §2, §4). Monitor runs: neither (CONTRACT §14: the product limits only).
   */
  caller: 'request' | 'monitor';
}

export type AdmissionResult =
  | { kind: 'replayed' }
  | { kind: 'executed' }
  | { kind: 'accepted'; jobId: number; jobRef: string };

export interface AdmitOptions {
  /** Runs in the job's transaction (acceptJob's `within`): a monitor run records its job there. */
  within?: (trx: Trx, job: { jobId: number; jobRef: string }) => Promise<void>;
}

const INLINE_DEADLINE_MS = 25_000;
const inlineDeadlines = new Deadlines(INLINE_DEADLINE_MS);
const REPLAYED: AdmissionResult = { kind: 'replayed' };
const EXECUTED: AdmissionResult = { kind: 'executed' };

/** One product's admission, built once per product and caller kind. */
export class ProductAdmission<T> {
  readonly #deps: AdmissionDeps;
  readonly #def: ProductDefinition;
  readonly #port: AdmissionPort<T>;
  readonly #limits: WriteLimits;
  readonly #keyed: boolean;

  constructor(deps: AdmissionDeps, def: ProductDefinition, port: AdmissionPort<T>, opts: ProductAdmissionOptions) {
    this.#deps = deps;
    this.#def = def;
    this.#port = port;
    this.#keyed = opts.caller === 'request';
    if (this.#keyed && !deps.idempotency) throw new Error('request admission needs idempotency');
    this.#limits = new WriteLimits(deps.limiter, this.#keyed ? deps.idempotency!.leases : undefined, def, {
      applicationLimit: opts.caller === 'request',
    });
  }

  get product(): ProductDefinition {
    return this.#def;
  }

  /**
   * Admits st (principal authenticated, st.rawBody or st.bodyError read, st.idempotencyKey set when
   * the request carried a well-formed one) and answers through the port. A refusal throws its
   * ApiError, after releasing the Idempotency-Key's lease (a failure stores nothing).
   */
  async admit(st: AdmissionState, path: string, target: T, opts?: AdmitOptions): Promise<AdmissionResult> {
    const def = this.#def;
    const deps = this.#deps;
    try {
      // Step 2 (step 1, the key itself, is the caller's: a Bearer header or a monitor's key id).
      st.step = 'authentication';
      const p = st.principal;
      if (!p) throw new ApiError('authentication_required');
      if (!p.scopes.has(def.scope))
        throw new ApiError('insufficient_scope', { details: { requiredScopes: [def.scope] } });
      await this.#limits.consume(st, 'POST', path, target, this.#port);
      if (this.#keyed) requireIdempotencyKey(st);
      reportBodyError(st);
      validateInput(st, def.input);
      checkProductInput(def, st.input, deps.config);
      st.step = 'active_gates';
      if (def.activeWork) {
        const grant = assertActiveAllowed(
          p,
          def.activeWork(st.input),
          deps.config.RESPONSIBLE_USE_VERSION,
          deps.runtime.services.scopeProofs,
        );
        st.activeGrant = grant instanceof Promise ? await grant : grant;
      }
      reportDeferredLimit(st);
      if (this.#keyed) {
        // Inline lookups are zero-credit (CONTRACT §6): nothing to protect beyond the reply itself.
        const pending = decideIdempotency(deps.idempotency!, st, def.mode === 'sync' ? 'redis' : 'mysql', 'POST', path);
        const decision = pending instanceof Promise ? await pending : pending;
        if (decision.kind === 'replay') {
          sendReplay(target, this.#port, decision.reply);
          return REPLAYED;
        }
      }
      st.step = 'readiness';
      assertReady(def, deps.runtime, st.input);
      if (def.mode === 'sync') {
        st.step = 'execution';
        await this.#executeInline(st, target);
        return EXECUTED;
      }
      st.step = 'credits_and_dispatch';
      return await this.#acceptJob(st, target, opts);
    } catch (err) {
      // A failure before commit stores nothing: the lease goes, so the same key may be retried.
      if (st.claim && deps.idempotency) await endClaim(deps.idempotency, st, false);
      throw err;
    }
  }

  async #executeInline(st: AdmissionState, target: T): Promise<void> {
    const def = this.#def;
    const deps = this.#deps;
    const ac = inlineDeadlines.start();
    st.execution = ac;
    try {
      // DNS answers cut where they left public DNS while it ran: one limitation on the envelope
      // (src/net/special-use-resolver.ts).
      const { value: outcome, cuts } = await collectAnswerCuts(() =>
        def.execute!(st.input, { runtime: deps.runtime, requestId: st.requestId, signal: ac.signal }),
      );
      const cut = answerCutLimitation(cuts);
      if (cut) outcome.limitations.push(cut);
      for (const l of outcome.lanes) laneOutcomes.inc({ product: def.id, lane: l.lane, status: l.status });
      // At most INLINE_REPLY_MAX_BYTES, whatever the target answered: it is kept for replay.
      const { envelope, text } = boundInlineEnvelope(buildEnvelope(def, st.input, outcome, st.requestId));
      productExecutions.inc({ product: def.id, status: envelope.status });
      await commitReply(deps.idempotency, st, 200, new SerializedBody(text), 'redis', target, this.#port);
    } finally {
      inlineDeadlines.end(ac);
      st.execution = undefined;
    }
  }

  /** Steps 10-11 for async products: reserve and accept in one transaction, then dispatch. */
  async #acceptJob(st: AdmissionState, target: T, opts: AdmitOptions | undefined): Promise<AdmissionResult> {
    const def = this.#def;
    const deps = this.#deps;
    const job = def.job!;
    const input = st.input;
    const price = def.price(input);
    let accepted: Accepted;
    try {
      accepted = await acceptJob(deps.db, {
        principal: st.principal!,
        product: def.id,
        target: job.target(input),
        profile: job.profile?.(input) ?? null,
        input,
        price,
        deadlineMs: deps.config.JOB_DEADLINE_MINUTES
          ? deps.config.JOB_DEADLINE_MINUTES * 60_000
          : (job.deadlineFor?.(input) ?? job.deadlineMs),
        objectCap: job.objectCap?.(input) ?? null,
        activeScope: st.activeGrant ?? null,
        requestId: st.requestId,
        claim: st.claim,
        ttlHours: deps.config.IDEMPOTENCY_TTL_HOURS,
        ...(opts?.within ? { within: opts.within } : {}),
        // A monitor's run answers nobody: no 202 body to build.
        noReply: !this.#keyed,
      });
    } catch (err) {
      if (!(err instanceof CommittedElsewhere) || !deps.idempotency) throw err;
      await answerCommittedElsewhere(deps.idempotency, st, target, this.#port);
      return REPLAYED;
    }
    if (deps.idempotency) await endClaim(deps.idempotency, st, true);
    admissionOutcomes.inc({ code: 'ok' });
    creditsReserved.inc({ product: def.id }, price);
    // Dispatch after commit. If it fails (or the process dies here) the outbox relay publishes it.
    if (process.env.LSS_FAULT_SKIP_PUBLISH !== '1') {
      try {
        await publishJob(deps.redis, accepted.jobId, 'plan');
        await markOutboxPublished(deps.db, accepted.jobId, 'plan');
      } catch (err) {
        st.log.warn({ err: { message: (err as Error).message } }, 'job publish deferred to the outbox relay');
      }
    }
    if (accepted.body !== null) this.#port.send(target, 202, JSON.stringify(accepted.body), false);
    return { kind: 'accepted', jobId: accepted.jobId, jobRef: accepted.jobRef };
  }
}
