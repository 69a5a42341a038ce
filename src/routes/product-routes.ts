// One POST route per registered product, each running the same visible admission chain in
// CONTRACT §2 order: auth → scope → rate limits → Idempotency-Key → body → validation → active
// gates → product limit → idempotency state → readiness → (credits) → execution.
import type { Express, RequestHandler, Response } from 'express';
import { ApiError } from '../contract/errors.ts';
import { buildEnvelope } from '../contract/envelope.ts';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { admitWrite, reportDeferredLimit } from '../http/rate-limit.ts';
import {
  answerCommittedElsewhere,
  claimIdempotency,
  commitReply,
  finishClaim,
  requireIdempotencyKey,
} from '../http/idempotency.ts';
import { readBody, reportBodyError, validateBody } from '../http/body.ts';
import { activeGates } from '../http/active-gates.ts';
import { atStep, state } from '../http/context.ts';
import { sequence } from '../http/sequence.ts';
import { Deadlines } from '../http/deadlines.ts';
import { laneReadiness, productReadiness } from '../products/kit/readiness.ts';
import type { ProductDefinition } from '../products/kit/product-contract.ts';
import { refuseSpecialUseNames } from '../products/kit/target-names.ts';
import { answerCutLimitation, collectAnswerCuts } from '../net/special-use-resolver.ts';
import { laneOutcomes, productExecutions, admissionOutcomes, creditsReserved } from '../metrics.ts';
import { acceptJob, CommittedElsewhere, markOutboxPublished } from '../jobs/jobs-repo.ts';
import { publishJob } from '../queue/streams.ts';

const INLINE_DEADLINE_MS = 25_000;

function productCheck(deps: AppDeps, def: ProductDefinition): RequestHandler {
  return (_req, res, next) => {
    const input = state(res).input;
    if (def.targetNames) refuseSpecialUseNames(def.targetNames(input), deps.config);
    def.check?.(input);
    next();
  };
}

function readinessGate(deps: AppDeps, def: ProductDefinition): RequestHandler {
  const code = def.id.startsWith('scan.') ? 'scan_profile_unavailable' : 'capability_unavailable';
  return (_req, res, next) => {
    if ((!def.execute && !def.job) || productReadiness(def, deps.runtime) === 'unavailable') {
      throw new ApiError(code, { details: { product: def.id }, cause: notReadyCause(deps, def) });
    }
    // An input may need more worker lanes than the product's minimum (a scan profile's web lane).
    const needed = def.job?.lanesFor?.(state(res).input) ?? [];
    const liveness = deps.runtime.services.laneHealth;
    // A lane restarting within LANE_RESTART_GRACE_MS still takes the job: its stream keeps it.
    const down = needed.filter((l) => !liveness?.accepting(l));
    if (down.length > 0) {
      throw new ApiError(code, {
        details: { product: def.id },
        cause: `no lane-${down.join(', lane-')} worker alive within the restart grace for this input`,
      });
    }
    next();
  };
}

/** "required lane dns_delegation: down (no orchestrator or lane-domain worker alive within the restart grace, …)". */
function notReadyCause(deps: AppDeps, def: ProductDefinition): string {
  if (!def.execute && !def.job) return 'product not built';
  const lanes = laneReadiness(def, deps.runtime);
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

const inlineDeadlines = new Deadlines(INLINE_DEADLINE_MS);

// The response's 'close' (not the request's, which has already ended once the body was read)
// tells that the client went away before the answer was written. One listener for every response.
function abortOnClose(this: Response): void {
  const running = state(this).execution;
  if (running && !this.writableFinished) running.abort(new Error('client closed'));
}

function executeInline(deps: AppDeps, def: ProductDefinition): RequestHandler {
  return async (_req, res) => {
    const s = state(res);
    const ac = inlineDeadlines.start();
    s.execution = ac;
    res.on('close', abortOnClose);
    try {
      // DNS answers cut where they left public DNS while it ran: one limitation on the envelope.
      const { value: outcome, cuts } = await collectAnswerCuts(() =>
        def.execute!(s.input, { runtime: deps.runtime, requestId: s.requestId, signal: ac.signal }),
      );
      const cut = answerCutLimitation(cuts);
      if (cut) outcome.limitations.push(cut);
      for (const l of outcome.lanes) laneOutcomes.inc({ product: def.id, lane: l.lane, status: l.status });
      const envelope = buildEnvelope(def, s.input, outcome, s.requestId);
      productExecutions.inc({ product: def.id, status: envelope.status });
      await commitReply(deps.idempotency, res, 200, envelope, 'redis');
    } finally {
      inlineDeadlines.end(ac);
      s.execution = undefined;
    }
  };
}

/** Steps 10-11 for async products: reserve and accept in one transaction, then dispatch. */
function acceptAsync(deps: AppDeps, def: ProductDefinition): RequestHandler {
  return async (_req, res) => {
    const s = state(res);
    const job = def.job!;
    let accepted;
    try {
      accepted = await acceptJob(deps.db, {
        principal: s.principal!,
        product: def.id,
        target: job.target(s.input),
        profile: job.profile?.(s.input) ?? null,
        input: s.input,
        price: def.price(s.input),
        deadlineMs: deps.config.JOB_DEADLINE_MINUTES
          ? deps.config.JOB_DEADLINE_MINUTES * 60_000
          : (job.deadlineFor?.(s.input) ?? job.deadlineMs),
        objectCap: job.objectCap?.(s.input) ?? null,
        requestId: s.requestId,
        claim: s.claim,
        ttlHours: deps.config.IDEMPOTENCY_TTL_HOURS,
      });
    } catch (err) {
      if (!(err instanceof CommittedElsewhere)) throw err;
      await answerCommittedElsewhere(deps.idempotency, res);
      return;
    }
    await finishClaim(deps.idempotency, res, true);
    admissionOutcomes.inc({ code: 'ok' });
    creditsReserved.inc({ product: def.id }, def.price(s.input));
    // Dispatch after commit. If it fails (or the process dies here) the outbox relay publishes it.
    if (process.env.LSS_FAULT_SKIP_PUBLISH !== '1') {
      try {
        await publishJob(deps.redis, accepted.jobId, 'plan');
        await markOutboxPublished(deps.db, accepted.jobId, 'plan');
      } catch (err) {
        s.log.warn({ err: { message: (err as Error).message } }, 'job publish deferred to the outbox relay');
      }
    }
    res.status(202).json(accepted.body);
  };
}

export function mountProductRoutes(app: Express, deps: AppDeps): void {
  const idemSync = claimIdempotency(deps.idempotency, 'redis');
  const idemPaid = claimIdempotency(deps.idempotency, 'mysql');
  for (const def of deps.products) {
    const chain: RequestHandler[] = [
      authenticate(deps.auth, [def.scope]),
      readBody,
      admitWrite(deps.limiter, deps.idempotency.leases, def),
      atStep('idempotency_key', requireIdempotencyKey),
      atStep('validation', reportBodyError),
      validateBody(def.input),
      productCheck(deps, def),
      atStep('active_gates', activeGates(def.activeWork, deps.config.RESPONSIBLE_USE_VERSION)),
      atStep('product_limit', reportDeferredLimit),
      // Inline lookups are zero-credit (CONTRACT §6): nothing to protect beyond the reply itself.
      atStep('idempotency', def.mode === 'sync' ? idemSync : idemPaid),
      atStep('readiness', readinessGate(deps, def)),
    ];
    chain.push(
      def.mode === 'sync'
        ? atStep('execution', executeInline(deps, def))
        : atStep('credits_and_dispatch', acceptAsync(deps, def)),
    );
    app.post(def.path, sequence(chain));
  }
}
