// Suppressions (CONTRACT §15). Admission as everywhere: key → scopes → limits (+ the
// Idempotency-Key lease on POST) → body → validation → idempotency state; then the suppression
// within the caller's workspace (another tenant's is suppression_not_found, exactly like one that
// never existed). A code must be in the findings catalog, a key one of the forms objects are keyed
// by (src/jobs/suppressions/suppression-key.ts), a product one of the registry's.
import type { Express, Request } from 'express';
import type { z } from 'zod';
import { ApiError } from '../contract/errors.ts';
import { publicId } from '../contract/ids.ts';
import {
  createSuppressionBody,
  patchSuppressionBody,
  SUPPRESSION_MAX_DAYS,
  suppressionListQuery,
  type CreateSuppressionBody,
  type PatchSuppressionBody,
  type SuppressionList,
} from '../contract/suppression-schemas.ts';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { admitWrite, rateLimit } from '../http/rate-limit.ts';
import { requireIdempotencyKey } from '../http/idempotency.ts';
import { readBody, reportBodyError, validateBody, zodIssues } from '../http/body.ts';
import { state } from '../http/context.ts';
import { expressPort } from '../http/express-port.ts';
import {
  answerCommittedElsewhere,
  decideIdempotency,
  endClaim,
  sendReplay,
} from '../jobs/admission/idempotency-step.ts';
import { createCursorCodec, type CursorCodec } from '../jobs/cursor.ts';
import {
  changeSuppression,
  createSuppression,
  findSuppression,
  listSuppressions,
  revokeSuppression,
  SuppressionCapReached,
  SuppressionCommittedElsewhere,
} from '../jobs/suppressions/suppressions-repo.ts';
import { suppressionView } from '../jobs/suppressions/suppression-view.ts';
import { normalizeSuppressionKey } from '../jobs/suppressions/suppression-key.ts';
import { findingCatalog } from '../products/findings-catalog.ts';

const DAY_MS = 86_400_000;
const CODES = new Set(findingCatalog.map((f) => f.code));

function invalid(reason: string, message: string, path: string): ApiError {
  return new ApiError('invalid_request', { message, details: { reason, issues: [{ path, message }] } });
}

/** An expiry as §15 allows it: in the future, at most 365 days ahead; null only for false_positive. */
function expiry(value: string | null, reason: string): Date | null {
  if (value === null) {
    if (reason !== 'false_positive')
      throw invalid('expiry_required', 'expiresAt may be null only for reason false_positive', 'expiresAt');
    return null;
  }
  const at = new Date(value);
  const now = Date.now();
  if (at.getTime() <= now) throw invalid('expiry_out_of_range', 'expiresAt must be in the future', 'expiresAt');
  if (at.getTime() > now + SUPPRESSION_MAX_DAYS * DAY_MS)
    throw invalid('expiry_out_of_range', `expiresAt must be at most ${SUPPRESSION_MAX_DAYS} days ahead`, 'expiresAt');
  return at;
}

export function mountSuppressionRoutes(app: Express, deps: AppDeps): void {
  const previousCursorSecret = (deps.config as { CURSOR_SECRET_PREVIOUS?: string }).CURSOR_SECRET_PREVIOUS;
  const cursors: CursorCodec = createCursorCodec({
    secret: deps.config.CURSOR_SECRET,
    previousSecret: previousCursorSecret,
  });
  const products = new Set(deps.products.map((p) => p.id));
  const cap = deps.config.SUPPRESSIONS_PER_WORKSPACE;

  app.post(
    '/v2/suppressions',
    authenticate(deps.auth, ['scan:create', 'finding:read']),
    readBody,
    admitWrite(deps.limiter, deps.idempotency.leases),
    requireIdempotencyKey,
    reportBodyError,
    validateBody(createSuppressionBody),
    async (req, res) => {
      const s = state(res);
      const body = s.input as CreateSuppressionBody;
      if (!CODES.has(body.code)) throw invalid('unknown_code', 'code is not a finding code of the catalog', 'code');
      const key = normalizeSuppressionKey(body.key);
      if (!key.ok) throw invalid('malformed_key', `key ${key.message}`, 'key');
      if (body.product !== null && !products.has(body.product))
        throw invalid('unknown_product', 'product is not a product id of this service', 'product');
      const expiresAt = expiry(body.expiresAt, body.reason);
      const pending = decideIdempotency(deps.idempotency, s, 'mysql', req.method, req.path);
      const decision = pending instanceof Promise ? await pending : pending;
      if (decision.kind === 'replay') return sendReplay(res, expressPort, decision.reply);
      s.step = 'suppression';
      const p = s.principal!;
      let row;
      try {
        row = await createSuppression(
          deps.db,
          {
            publicId: publicId('sup'),
            workspaceId: p.workspaceId,
            keyId: p.keyId,
            code: body.code,
            key: key.key,
            product: body.product,
            reason: body.reason,
            note: body.note,
            expiresAt,
          },
          cap,
          (r) => ({ status: 201, stored: JSON.stringify(suppressionView(r)) }),
          s.claim,
          deps.config.IDEMPOTENCY_TTL_HOURS,
        );
      } catch (err) {
        if (err instanceof SuppressionCapReached)
          throw invalid(
            'suppressions_per_workspace',
            `the workspace holds its limit of ${cap} active suppressions`,
            '',
          );
        if (!(err instanceof SuppressionCommittedElsewhere)) throw err;
        return answerCommittedElsewhere(deps.idempotency, s, res, expressPort);
      }
      await endClaim(deps.idempotency, s, true);
      expressPort.send(res, 201, JSON.stringify(suppressionView(row)), false);
    },
  );

  app.get(
    '/v2/suppressions',
    authenticate(deps.auth, ['scan:read', 'finding:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      const s = state(res);
      s.step = 'suppression';
      const query = parseQuery(suppressionListQuery, req);
      const scope = {
        workspaceId: s.principal!.workspaceId,
        jobId: 0,
        route: 'suppressions' as const,
        filter: query.active ?? '',
      };
      const after = query.cursor === undefined ? 0 : cursors.decode(query.cursor, scope);
      if (after === null) throw new ApiError('invalid_cursor');
      const active = query.active === undefined ? undefined : query.active === 'true';
      const rows = await listSuppressions(deps.db, scope.workspaceId, after, query.limit + 1, active);
      const items = rows.slice(0, query.limit);
      const body: SuppressionList = {
        items: items.map((r) => suppressionView(r)),
        page: {
          limit: query.limit,
          nextCursor: rows.length > query.limit ? cursors.encode({ ...scope, lastSeq: items.at(-1)!.id }) : null,
        },
      };
      res.json(body);
    },
  );

  app.get(
    '/v2/suppressions/:suppression_id',
    authenticate(deps.auth, ['scan:read', 'finding:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'suppression';
      const row = await findSuppression(deps.db, state(res).principal!.workspaceId, idOf(req));
      if (!row) throw new ApiError('suppression_not_found');
      res.json(suppressionView(row));
    },
  );

  app.patch(
    '/v2/suppressions/:suppression_id',
    authenticate(deps.auth, ['scan:create']),
    readBody,
    rateLimit(deps.limiter),
    reportBodyError,
    validateBody(patchSuppressionBody),
    async (req, res) => {
      const s = state(res);
      s.step = 'suppression';
      const body = s.input as PatchSuppressionBody;
      const p = s.principal!;
      const current = await findSuppression(deps.db, p.workspaceId, idOf(req));
      if (!current) throw new ApiError('suppression_not_found');
      const change: { note?: string; expiresAt?: Date | null } = {};
      if (body.note !== undefined) change.note = body.note;
      if (body.expiresAt !== undefined) change.expiresAt = expiry(body.expiresAt, current.reason);
      const row = await changeSuppression(deps.db, p.workspaceId, idOf(req), p.keyId, change);
      if (row === null) throw new ApiError('suppression_not_found');
      if (row === 'revoked')
        throw invalid('suppression_revoked', 'a revoked suppression cannot be changed; create a new one', '');
      res.json(suppressionView(row));
    },
  );

  app.delete(
    '/v2/suppressions/:suppression_id',
    authenticate(deps.auth, ['scan:create']),
    rateLimit(deps.limiter),
    async (req, res) => {
      const s = state(res);
      s.step = 'suppression';
      if (!(await revokeSuppression(deps.db, s.principal!.workspaceId, idOf(req), s.principal!.keyId)))
        throw new ApiError('suppression_not_found');
      res.status(204).end();
    },
  );
}

const idOf = (req: Request) => String(req.params.suppression_id);

function parseQuery<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
  return parsed.data;
}
