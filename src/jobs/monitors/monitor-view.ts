// The public projection of a monitor and of its deliveries (CONTRACT §14). No internal id leaves
// here: monitors, events and jobs are named by their public ids only.
import type { DeliveryView, MonitorView } from '../../contract/monitor-schemas.ts';
import type { DeliveryRow } from './deliveries-repo.ts';
import type { MonitorRow, RunRecord } from './monitors-repo.ts';

export interface MonitorViewOptions {
  /** The secret in clear: only in the reply that created it. */
  secret?: string;
  lastRuns?: RunRecord[];
  /** A webhook failing this long is marked `failing` (CONTRACT §14: 24 h). */
  failingAfterSeconds: number;
  /**
   * The webhook URL in full (default): for keys that may change the monitor (scan:create). A
   * reader's key sees its scheme, host and path, the query as `?…` (tokens often ride there).
   */
  fullUrl?: boolean;
  now?: number;
}

export function monitorView(m: MonitorRow, opts: MonitorViewOptions): MonitorView {
  const now = opts.now ?? Date.now();
  let webhook: MonitorView['webhook'] = null;
  if (m.webhook_url) {
    const failing =
      m.webhook_failing_since !== null && now - m.webhook_failing_since.getTime() >= opts.failingAfterSeconds * 1000;
    webhook = {
      url: opts.fullUrl === false ? withoutQuery(m.webhook_url) : m.webhook_url,
      status: m.webhook_disabled ? 'disabled' : failing ? 'failing' : 'active',
      disabled: m.webhook_disabled === 'gone' ? 'gone' : null,
      failingSince: m.webhook_failing_since?.toISOString() ?? null,
      ...(opts.secret ? { secret: opts.secret } : {}),
    };
  }
  return {
    monitorId: m.public_id,
    product: m.product as MonitorView['product'],
    request: m.request as Record<string, unknown>,
    schedule: { intervalSeconds: m.interval_seconds },
    paused: m.paused,
    pausedReason: m.paused && m.paused_reason === 'key_revoked' ? 'key_revoked' : null,
    nextRunAt: m.next_run_at?.toISOString() ?? null,
    createdAt: m.created_at.toISOString(),
    webhook,
    ...(opts.lastRuns
      ? {
          lastRuns: opts.lastRuns.map((r) => ({
            runAt: (r.runAt ?? r.dueAt).toISOString(),
            dueAt: r.dueAt.toISOString(),
            jobRef: r.jobRef,
            outcome: r.outcome === 'started' ? ('started' as const) : ('skipped' as const),
            code: r.code,
          })),
        }
      : {}),
  };
}

export function deliveryView(d: DeliveryRow): DeliveryView {
  return {
    eventId: d.publicId,
    type: d.type as DeliveryView['type'],
    jobRef: d.jobRef,
    status: d.status,
    attempts: d.attempts,
    lastAttemptAt: d.lastAttemptAt?.toISOString() ?? null,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    nextAttemptAt: d.status === 'pending' ? (d.nextAttemptAt?.toISOString() ?? null) : null,
  };
}

/** scheme://host[:port]/path, and `?…` when the URL had a query (its fragment never leaves). */
export function withoutQuery(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return url.replace(/[?#].*$/s, '?…');
  }
}
