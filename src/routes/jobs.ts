// Retained-job routes: status and cancel. Pages, findings and objects are in job-pages.ts.
// A job of another workspace is job_not_found, exactly like one that never existed.
import type { Express } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { admitWrite, rateLimit } from '../http/rate-limit.ts';
import { claimIdempotency, commitReply, requireIdempotencyKey } from '../http/idempotency.ts';
import { readBody, reportBodyError, validateBody } from '../http/body.ts';
import { state } from '../http/context.ts';
import { ApiError } from '../contract/errors.ts';
import { findJob, jobView } from '../jobs/job-view.ts';
import { markOutboxPublished, requestCancel } from '../jobs/jobs-repo.ts';
import { publishJob } from '../queue/streams.ts';

export const cancelBody = z.strictObject({ reason: z.string().max(200).optional() });

export function mountJobRoutes(app: Express, deps: AppDeps): void {
  app.get('/v2/jobs/:job_ref', authenticate(deps.auth, ['scan:read']), rateLimit(deps.limiter), async (req, res) => {
    const s = state(res);
    s.step = 'job_read';
    const job = await findJob(deps.db, s.principal!.workspaceId, String(req.params.job_ref));
    if (!job) throw new ApiError('job_not_found');
    res.json(await jobView(deps.db, job, deps.runtime.services.laneHealth));
  });

  app.post(
    '/v2/jobs/:job_ref/cancel',
    authenticate(deps.auth, ['scan:create']),
    readBody,
    admitWrite(deps.limiter, deps.idempotency.leases),
    requireIdempotencyKey,
    reportBodyError,
    validateBody(cancelBody, { optional: true }),
    claimIdempotency(deps.idempotency, 'mysql'),
    async (req, res) => {
      const s = state(res);
      s.step = 'cancel';
      const out = await requestCancel(deps.db, s.principal!.workspaceId, String(req.params.job_ref));
      if (!out) throw new ApiError('job_not_found');
      if (out.changed) {
        try {
          await publishJob(deps.redis, out.job.id, 'cancel');
          await markOutboxPublished(deps.db, out.job.id, 'cancel');
        } catch (err) {
          s.log.warn({ err: { message: (err as Error).message } }, 'cancel publish deferred to the outbox relay');
        }
      }
      await commitReply(deps.idempotency, res, 202, await jobView(deps.db, out.job), 'mysql');
    },
  );
}
