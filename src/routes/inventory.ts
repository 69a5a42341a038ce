// The inventory (CONTRACT §16): the estate's rows and its open findings, read within the caller's
// workspace, keyset-paged (src/jobs/inventory/inventory-repo.ts). A cursor is bound to the
// workspace, the route and a fingerprint of the filters: another view's cursor is invalid_cursor.
import { createHash } from 'node:crypto';
import type { Express, Request } from 'express';
import type { z } from 'zod';
import { ApiError } from '../contract/errors.ts';
import {
  inventoryFindingsQuery,
  inventoryQuery,
  type InventoryFindingsPage,
  type InventoryItem,
  type InventoryPage,
} from '../contract/inventory-schemas.ts';
import type { SuppressionReason } from '../contract/suppression-schemas.ts';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { rateLimit } from '../http/rate-limit.ts';
import { zodIssues } from '../http/body.ts';
import { state } from '../http/context.ts';
import { createCursorCodec, type CursorCodec, type CursorScope } from '../jobs/cursor.ts';
import {
  inventoryFindingsPage,
  inventoryPage,
  inventoryPosition,
  type InventoryRow,
} from '../jobs/inventory/inventory-repo.ts';
import { severityName } from '../jobs/pages-repo.ts';

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

/** The filters as one short fingerprint (a cursor's filter field holds at most 64 bytes). */
function fingerprint(filters: Record<string, unknown>): string {
  const set = Object.entries(filters).filter(([, v]) => v !== undefined);
  if (set.length === 0) return '';
  return createHash('sha256').update(JSON.stringify(set)).digest('base64url').slice(0, 32);
}

function item(r: InventoryRow): InventoryItem {
  return {
    type: r.type,
    key: r.okey,
    state: r.state,
    firstSeenAt: iso(r.first_seen_at)!,
    lastSeenAt: iso(r.last_seen_at)!,
    lastCheckedAt: iso(r.last_checked_at),
    changedAt: iso(r.changed_at),
    lastJobRef: r.last_job_ref,
    lastObjectId: Number(r.job_alive) === 1 ? r.last_object_ref : null,
    products: r.products.split(',').filter((p) => p.length > 0),
    openFindings: {
      critical: Number(r.open_critical),
      high: Number(r.open_high),
      medium: Number(r.open_medium),
      low: Number(r.open_low),
      info: Number(r.open_info),
    },
  };
}

export function mountInventoryRoutes(app: Express, deps: AppDeps): void {
  const previousCursorSecret = (deps.config as { CURSOR_SECRET_PREVIOUS?: string }).CURSOR_SECRET_PREVIOUS;
  const cursors: CursorCodec = createCursorCodec({
    secret: deps.config.CURSOR_SECRET,
    previousSecret: previousCursorSecret,
  });

  app.get('/v2/inventory', authenticate(deps.auth, ['scan:read']), rateLimit(deps.limiter), async (req, res) => {
    const s = state(res);
    s.step = 'inventory';
    const query = parseQuery(inventoryQuery, req);
    const filters = {
      type: query.type,
      state: query.state,
      q: query.q,
      minSeverity: query.minSeverity,
      changedSince: query.changedSince,
    };
    const workspaceId = s.principal!.workspaceId;
    const scope: CursorScope = { workspaceId, jobId: 0, route: 'inventory', filter: fingerprint(filters) };
    let after = null;
    if (query.cursor !== undefined) {
      const id = cursors.decode(query.cursor, scope);
      after = id === null ? null : await inventoryPosition(deps.db, workspaceId, id);
      if (after === null) throw new ApiError('invalid_cursor');
    }
    const page = await inventoryPage(
      deps.db,
      workspaceId,
      { ...filters, changedSince: query.changedSince ? new Date(query.changedSince) : undefined },
      after,
      query.limit,
    );
    const rows = page?.rows ?? [];
    const body: InventoryPage = {
      items: rows.map(item),
      page: {
        limit: query.limit,
        nextCursor: page?.hasMore ? cursors.encode({ ...scope, lastSeq: Number(rows.at(-1)!.id) }) : null,
      },
    };
    res.json(body);
  });

  app.get(
    '/v2/inventory/findings',
    authenticate(deps.auth, ['finding:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      const s = state(res);
      s.step = 'inventory';
      const query = parseQuery(inventoryFindingsQuery, req);
      const suppressed = query.suppressed === 'include' ? undefined : query.suppressed;
      const filters = { severity: query.severity, code: query.code, q: query.q, suppressed };
      const workspaceId = s.principal!.workspaceId;
      const scope: CursorScope = {
        workspaceId,
        jobId: 0,
        route: 'inventory_findings',
        filter: fingerprint(filters),
      };
      const after = query.cursor === undefined ? 0 : cursors.decode(query.cursor, scope);
      if (after === null) throw new ApiError('invalid_cursor');
      const page = await inventoryFindingsPage(
        deps.db,
        workspaceId,
        { minSeverity: query.severity, code: query.code, q: query.q, suppressed },
        after,
        query.limit,
      );
      const body: InventoryFindingsPage = {
        items: page.rows.map((r) => ({
          code: r.code,
          severity: severityName(Number(r.severity)),
          objectType: r.object_type,
          objectKey: r.object_key,
          firstSeenAt: iso(r.first_seen_at)!,
          lastSeenAt: iso(r.last_seen_at)!,
          jobRef: r.job_ref,
          findingId: r.finding_ref,
          suppressed: r.suppression_ref
            ? {
                suppressionId: r.suppression_ref,
                reason: r.suppression_reason as SuppressionReason,
                expiresAt: iso(r.suppression_expires_at),
              }
            : null,
        })),
        page: {
          limit: query.limit,
          nextCursor: page.hasMore ? cursors.encode({ ...scope, lastSeq: Number(page.rows.at(-1)!.id) }) : null,
        },
      };
      res.json(body);
    },
  );
}

function parseQuery<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
  return parsed.data;
}
