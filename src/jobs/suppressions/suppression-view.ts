// The public projection of a suppression (CONTRACT §15): allowlisted fields, no database id.
import type { SuppressionView } from '../../contract/suppression-schemas.ts';
import { isActive, type SuppressionRow } from './suppressions-repo.ts';

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

export function suppressionView(r: SuppressionRow, now = Date.now()): SuppressionView {
  return {
    suppressionId: r.public_id,
    code: r.code,
    key: r.match_key,
    product: r.product,
    reason: r.reason,
    note: r.note,
    expiresAt: iso(r.expires_at),
    createdAt: new Date(r.created_at).toISOString(),
    createdBy: r.created_by,
    revokedAt: iso(r.revoked_at),
    active: isActive(r, now),
    history: r.history.map((h) => ({
      at: h.at,
      action: h.action,
      by: h.by,
      ...(h.changes ? { changes: h.changes } : {}),
    })),
  };
}
