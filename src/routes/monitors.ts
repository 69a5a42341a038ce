// Monitors and their deliveries (CONTRACT §14). Admission as everywhere: key → scopes → limits
// (+ the Idempotency-Key lease on POST) → body → validation → idempotency state; then the monitor
// within the caller's workspace (another tenant's, or a deleted one, is monitor_not_found, exactly
// like one that never existed). The monitor's `request` is validated by its product's own schema
// and checks, as on the product's route; its webhook URL by the outbound guard (no byte is sent).
import type { Express, Request, Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../contract/errors.ts';
import { publicId } from '../contract/ids.ts';
import {
  createMonitorBody,
  deliveriesQuery,
  MONITOR_MAX_INTERVAL_SECONDS,
  monitorListQuery,
  patchMonitorBody,
  type CreateMonitorBody,
  type DeliveriesPage,
  type MonitorList,
  type PatchMonitorBody,
} from '../contract/monitor-schemas.ts';
import type { AppDeps } from '../http/deps.ts';
import type { Db } from '../db/database.ts';
import type { Trx } from '../db/transaction.ts';
import { authenticate } from '../http/authenticate.ts';
import { admitWrite, rateLimit } from '../http/rate-limit.ts';
import { commitReply, requireIdempotencyKey, claimIdempotency } from '../http/idempotency.ts';
import { readBody, reportBodyError, validateBody, zodIssues } from '../http/body.ts';
import { state } from '../http/context.ts';
import { expressPort } from '../http/express-port.ts';
import type { AdmissionPort } from '../jobs/admission/admission-port.ts';
import {
  answerCommittedElsewhere,
  decideIdempotency,
  endClaim,
  requireIdempotencyKey as requireKey,
  sendReplay,
} from '../jobs/admission/idempotency-step.ts';
import { checkProductInput } from '../jobs/admission/input-validation.ts';
import { createCursorCodec, type CursorCodec } from '../jobs/cursor.ts';
import {
  changeMonitor,
  createMonitor,
  deleteMonitor,
  findMonitor,
  lastRuns,
  listMonitors,
  MonitorCapReached,
  MonitorCommittedElsewhere,
  RotationOverlap,
  type MonitorChange,
  type MonitorRow,
} from '../jobs/monitors/monitors-repo.ts';
import { deliveriesPage, redeliver } from '../jobs/monitors/deliveries-repo.ts';
import { deliveryView, monitorView } from '../jobs/monitors/monitor-view.ts';
import { retryScheduleOf } from '../jobs/monitors/retry-schedule.ts';
import { generateSecret, SecretBox } from '../jobs/monitors/webhook-secrets.ts';
import { assertWebhookTarget } from '../jobs/monitors/webhook-target.ts';
import type { ProductDefinition } from '../products/kit/product-contract.ts';

/** A rotated secret keeps signing beside its successor this long (CONTRACT §14). */
const ROTATION_OVERLAP_MS = 24 * 3_600_000;
const LAST_RUNS = 10;

function invalid(reason: string, message: string, path: string): ApiError {
  return new ApiError('invalid_request', { message, details: { reason, issues: [{ path, message }] } });
}

/**
 * A create's or a rotation's reply is kept for replay with its secret sealed (WEBHOOK_SECRET_KEY,
 * bound to the monitor), never in clear; a replay opens it again, so a client that lost the first
 * answer still gets its secret.
 */
function unsealingPort(box: SecretBox): AdmissionPort<Response> {
  return {
    header: expressPort.header,
    send(res, status, text, replayed) {
      if (!replayed) return expressPort.send(res, status, text, replayed);
      const body = JSON.parse(text) as { webhook?: { secret?: string } | null };
      const sealed = body.webhook?.secret;
      if (sealed !== undefined) {
        const secret = box.openText(sealed, String((body as { monitorId?: unknown }).monitorId));
        if (secret) body.webhook!.secret = secret;
        else delete body.webhook!.secret;
      }
      expressPort.send(res, status, JSON.stringify(body), true);
    },
  };
}

export function mountMonitorRoutes(app: Express, deps: AppDeps): void {
  const previousCursorSecret = (deps.config as { CURSOR_SECRET_PREVIOUS?: string }).CURSOR_SECRET_PREVIOUS;
  const cursors: CursorCodec = createCursorCodec({
    secret: deps.config.CURSOR_SECRET,
    previousSecret: previousCursorSecret,
  });
  const box = new SecretBox(deps.config.WEBHOOK_SECRET_KEY, deps.config.WEBHOOK_SECRET_KEY_PREVIOUS);
  const createPort = unsealingPort(box);
  const failingAfterSeconds = retryScheduleOf(deps.config).windowSeconds;
  const products = new Map(deps.products.map((p) => [p.id, p]));
  const guard = () => {
    const g = deps.runtime.services.outbound;
    if (!g) throw new ApiError('service_unavailable', { cause: 'no outbound guard in this process' });
    return g;
  };
  const view = (
    row: Parameters<typeof monitorView>[0],
    extra: { secret?: string; lastRuns?: Awaited<ReturnType<typeof lastRuns>>; fullUrl?: boolean } = {},
  ) => monitorView(row, { failingAfterSeconds, ...extra });
  /** A reader's key (no scan:create) sees the webhook URL without its query (monitor-view.ts). */
  const fullUrlFor = (res: Parameters<typeof state>[0]) => state(res).principal?.scopes.has('scan:create') === true;

  /** The product's own request body, validated as on its route (issues under request.…). */
  const productRequest = (def: ProductDefinition, request: unknown): unknown => {
    const parsed = def.input.safeParse(request);
    if (!parsed.success) {
      throw new ApiError('invalid_request', {
        details: {
          issues: zodIssues(parsed.error).map((i) => ({ ...i, path: i.path ? `request.${i.path}` : 'request' })),
        },
      });
    }
    checkProductInput(def, parsed.data, deps.config);
    return request;
  };
  const interval = (seconds: number): number => {
    const min = deps.config.MONITOR_MIN_INTERVAL_SECONDS;
    if (seconds < min || seconds > MONITOR_MAX_INTERVAL_SECONDS) {
      throw invalid(
        'interval_out_of_range',
        `schedule.intervalSeconds must be from ${min} to ${MONITOR_MAX_INTERVAL_SECONDS}`,
        'schedule.intervalSeconds',
      );
    }
    return seconds;
  };
  const webhookUrl = async (url: string): Promise<string> => {
    try {
      return await assertWebhookTarget(guard(), url);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError('service_unavailable', {
        retryAfterSeconds: 5,
        cause: `webhook URL check: ${(err as Error).message}`,
      });
    }
  };
  const monitorOf = async (req: Request, res: Response) => {
    const m = await findMonitor(deps.db, state(res).principal!.workspaceId, String(req.params.monitor_id));
    if (!m) throw new ApiError('monitor_not_found');
    return m;
  };

  app.post(
    '/v2/monitors',
    authenticate(deps.auth, ['scan:create']),
    readBody,
    admitWrite(deps.limiter, deps.idempotency.leases),
    requireIdempotencyKey,
    reportBodyError,
    validateBody(createMonitorBody),
    async (req, res) => {
      const s = state(res);
      // Step 5 goes on: the product's own request, the schedule, the webhook URL; then step 8.
      const body = s.input as CreateMonitorBody;
      const def = products.get(body.product);
      if (!def?.job) throw invalid('product_not_monitorable', `${body.product} cannot be monitored here`, 'product');
      const request = productRequest(def, body.request);
      const seconds = interval(body.schedule.intervalSeconds);
      const url = body.webhook ? await webhookUrl(body.webhook.url) : null;
      const pending = decideIdempotency(deps.idempotency, s, 'mysql', req.method, req.path);
      const decision = pending instanceof Promise ? await pending : pending;
      if (decision.kind === 'replay') return sendReplay(res, createPort, decision.reply);
      s.step = 'monitor';
      const secret = url ? generateSecret() : null;
      const p = s.principal!;
      const ref = publicId('mon');
      let row;
      try {
        row = await createMonitor(
          deps.db,
          {
            publicId: ref,
            workspaceId: p.workspaceId,
            apiKeyId: p.keyId,
            product: def.id,
            request,
            intervalSeconds: seconds,
            paused: body.paused,
            webhookUrl: url,
            webhookSecret: secret ? box.seal(secret, ref) : null,
          },
          deps.config.MONITORS_PER_WORKSPACE,
          (r) => ({
            status: 201,
            stored: JSON.stringify(view(r, secret ? { secret: box.sealText(secret, r.public_id) } : {})),
          }),
          s.claim,
          deps.config.IDEMPOTENCY_TTL_HOURS,
        );
      } catch (err) {
        if (err instanceof MonitorCapReached) {
          throw invalid(
            'monitors_per_workspace',
            `the workspace holds its limit of ${deps.config.MONITORS_PER_WORKSPACE} monitors`,
            '',
          );
        }
        if (!(err instanceof MonitorCommittedElsewhere)) throw err;
        return answerCommittedElsewhere(deps.idempotency, s, res, createPort);
      }
      await endClaim(deps.idempotency, s, true);
      expressPort.send(res, 201, JSON.stringify(view(row, secret ? { secret } : {})), false);
    },
  );

  app.get('/v2/monitors', authenticate(deps.auth, ['scan:read']), rateLimit(deps.limiter), async (req, res) => {
    const s = state(res);
    s.step = 'monitor';
    const query = parseQuery(monitorListQuery, req);
    const scope = { workspaceId: s.principal!.workspaceId, jobId: 0, route: 'monitors' as const, filter: '' };
    const after = query.cursor === undefined ? 0 : cursors.decode(query.cursor, scope);
    if (after === null) throw new ApiError('invalid_cursor');
    const rows = await listMonitors(deps.db, scope.workspaceId, after, query.limit + 1);
    const items = rows.slice(0, query.limit);
    const body: MonitorList = {
      items: items.map((m) => view(m, { fullUrl: fullUrlFor(res) })),
      page: {
        limit: query.limit,
        nextCursor: rows.length > query.limit ? cursors.encode({ ...scope, lastSeq: items.at(-1)!.id }) : null,
      },
    };
    res.json(body);
  });

  app.get(
    '/v2/monitors/:monitor_id',
    authenticate(deps.auth, ['scan:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'monitor';
      const m = await monitorOf(req, res);
      res.json(view(m, { lastRuns: await lastRuns(deps.db, m.id, LAST_RUNS), fullUrl: fullUrlFor(res) }));
    },
  );

  // A PATCH honours an Idempotency-Key (a replay answers the stored reply) and one that rotates the
  // secret requires it: a rotation retried after its reply was lost must return the secret it made,
  // not make another and push the one receivers hold out of the overlap.
  app.patch(
    '/v2/monitors/:monitor_id',
    authenticate(deps.auth, ['scan:create']),
    readBody,
    admitWrite(deps.limiter, deps.idempotency.leases),
    reportBodyError,
    validateBody(patchMonitorBody),
    async (req, res) => {
      const s = state(res);
      const body = s.input as PatchMonitorBody;
      if (body.webhook?.rotateSecret) requireKey(s);
      const change: MonitorChange = {};
      if (body.schedule) change.intervalSeconds = interval(body.schedule.intervalSeconds);
      if (body.paused !== undefined) change.paused = body.paused;
      if (body.paused === false) change.resumeAsKeyId = s.principal!.keyId;
      let secret: string | undefined;
      if (body.webhook === null) change.webhookUrl = null;
      else if (body.webhook?.url !== undefined) change.webhookUrl = await webhookUrl(body.webhook.url);
      if (s.idempotencyKey) {
        const pending = decideIdempotency(deps.idempotency, s, 'mysql', req.method, req.path);
        const decision = pending instanceof Promise ? await pending : pending;
        if (decision.kind === 'replay') return sendReplay(res, createPort, decision.reply);
      }
      s.step = 'monitor';
      const reply = async (r: MonitorRow, db: Db | Trx, secretText?: string) =>
        view(r, { ...(secretText ? { secret: secretText } : {}), lastRuns: await lastRuns(db, r.id, LAST_RUNS) });
      let row: MonitorRow | null;
      try {
        row = await changeMonitor(
          deps.db,
          s.principal!.workspaceId,
          String(req.params.monitor_id),
          (m) => {
            const hasWebhook = m.webhook_url !== null && change.webhookUrl !== null;
            const adding = m.webhook_url === null && typeof change.webhookUrl === 'string';
            if (body.webhook?.rotateSecret && !hasWebhook && !adding) {
              throw invalid(
                'no_webhook',
                'the monitor has no webhook whose secret could be rotated',
                'webhook.rotateSecret',
              );
            }
            if (adding || body.webhook?.rotateSecret) {
              secret = generateSecret();
              change.webhookSecret = box.seal(secret, m.public_id);
              if (!adding) change.rotatedUntil = new Date(Date.now() + ROTATION_OVERLAP_MS);
            }
            return change;
          },
          s.claim
            ? {
                claim: s.claim,
                ttlHours: deps.config.IDEMPOTENCY_TTL_HOURS,
                reply: async (r, trx) => ({
                  status: 200,
                  stored: JSON.stringify(await reply(r, trx, secret ? box.sealText(secret, r.public_id) : undefined)),
                }),
              }
            : undefined,
        );
      } catch (err) {
        if (err instanceof RotationOverlap) {
          throw invalid(
            'rotation_overlap',
            `the previous secret signs beside the current one until ${err.until.toISOString()}: rotate again after that (or remove the webhook and add it again)`,
            'webhook.rotateSecret',
          );
        }
        if (!(err instanceof MonitorCommittedElsewhere)) throw err;
        return answerCommittedElsewhere(deps.idempotency, s, res, createPort);
      }
      if (!row) throw new ApiError('monitor_not_found');
      await endClaim(deps.idempotency, s, true);
      expressPort.send(res, 200, JSON.stringify(await reply(row, deps.db, secret)), false);
    },
  );

  app.delete(
    '/v2/monitors/:monitor_id',
    authenticate(deps.auth, ['scan:create']),
    rateLimit(deps.limiter),
    async (req, res) => {
      const s = state(res);
      s.step = 'monitor';
      if (!(await deleteMonitor(deps.db, s.principal!.workspaceId, String(req.params.monitor_id)))) {
        throw new ApiError('monitor_not_found');
      }
      res.status(204).end();
    },
  );

  app.get(
    '/v2/monitors/:monitor_id/deliveries',
    authenticate(deps.auth, ['scan:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      const s = state(res);
      s.step = 'monitor';
      const query = parseQuery(deliveriesQuery, req);
      const m = await monitorOf(req, res);
      const scope = { workspaceId: m.workspace_id, jobId: m.id, route: 'deliveries' as const, filter: '' };
      const before = query.cursor === undefined ? null : cursors.decode(query.cursor, scope);
      if (before === null && query.cursor !== undefined) throw new ApiError('invalid_cursor');
      const rows = await deliveriesPage(deps.db, m.id, before, query.limit + 1);
      const items = rows.slice(0, query.limit);
      const body: DeliveriesPage = {
        monitorId: m.public_id,
        items: items.map(deliveryView),
        page: {
          limit: query.limit,
          nextCursor: rows.length > query.limit ? cursors.encode({ ...scope, lastSeq: items.at(-1)!.id }) : null,
        },
      };
      res.json(body);
    },
  );

  app.post(
    '/v2/monitors/:monitor_id/deliveries/:event_id/redeliver',
    authenticate(deps.auth, ['scan:create']),
    readBody,
    admitWrite(deps.limiter, deps.idempotency.leases),
    requireIdempotencyKey,
    reportBodyError,
    validateBody(z.strictObject({}), { optional: true }),
    claimIdempotency(deps.idempotency, 'mysql'),
    async (req, res) => {
      state(res).step = 'monitor';
      const m = await monitorOf(req, res);
      const d = await redeliver(deps.db, m.id, String(req.params.event_id));
      if (!d) {
        throw new ApiError('monitor_not_found', { message: 'The monitor has no such event.' });
      }
      await commitReply(deps.idempotency, res, 202, deliveryView(d), 'mysql');
    },
  );
}

function parseQuery<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
  return parsed.data;
}
