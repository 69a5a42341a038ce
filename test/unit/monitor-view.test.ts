// The public projection of a monitor (CONTRACT §14): the webhook's state as its row says it, the
// secret only when handed in (the reply that created it), no internal id.
import { describe, expect, it } from 'vitest';
import { monitorView, withoutQuery } from '../../src/jobs/monitors/monitor-view.ts';
import type { MonitorRow } from '../../src/jobs/monitors/monitors-repo.ts';

const NOW = Date.parse('2026-11-28T12:00:00.000Z');
const row = (over: Partial<MonitorRow> = {}): MonitorRow => ({
  id: 41,
  public_id: 'mon_0000000000000000000000000A',
  workspace_id: 7,
  api_key_id: 9,
  product: 'lookup.mail.v1',
  request: { value: 'example.test' },
  interval_seconds: 3600,
  paused: false,
  paused_reason: null,
  next_run_at: new Date(NOW + 60_000),
  last_job_id: 12,
  webhook_url: 'https://hooks.example.test/lss',
  webhook_secret: Buffer.from('sealed'),
  webhook_prev_secret: null,
  webhook_prev_secret_until: null,
  webhook_disabled: null,
  webhook_failing_since: null,
  created_at: new Date(NOW - 86_400_000),
  deleted_at: null,
  ...over,
});
const day = 86_400;

describe('monitorView', () => {
  it('a reader (no scan:create) sees scheme, host and path, the query as ?… (issue 45 item 11)', () => {
    const withToken = row({ webhook_url: 'https://hooks.example.test:8443/lss/in?token=s3cr3t&x=1' });
    expect(monitorView(withToken, { failingAfterSeconds: day, now: NOW, fullUrl: false }).webhook?.url).toBe(
      'https://hooks.example.test:8443/lss/in?…',
    );
    expect(monitorView(withToken, { failingAfterSeconds: day, now: NOW }).webhook?.url).toBe(
      'https://hooks.example.test:8443/lss/in?token=s3cr3t&x=1',
    );
    expect(withoutQuery('https://hooks.example.test/lss')).toBe('https://hooks.example.test/lss');
    expect(
      JSON.stringify(monitorView(withToken, { failingAfterSeconds: day, now: NOW, fullUrl: false })),
    ).not.toContain('s3cr3t');
  });

  it('is active, then failing once no attempt was delivered for 24 h, and disabled after a 410', () => {
    expect(monitorView(row(), { failingAfterSeconds: day, now: NOW }).webhook).toEqual({
      url: 'https://hooks.example.test/lss',
      status: 'active',
      disabled: null,
      failingSince: null,
    });
    const since = new Date(NOW - day * 1000 + 1000);
    expect(
      monitorView(row({ webhook_failing_since: since }), { failingAfterSeconds: day, now: NOW }).webhook,
    ).toMatchObject({
      status: 'active',
      failingSince: since.toISOString(),
    });
    expect(
      monitorView(row({ webhook_failing_since: new Date(NOW - day * 1000) }), { failingAfterSeconds: day, now: NOW })
        .webhook?.status,
    ).toBe('failing');
    expect(
      monitorView(row({ webhook_disabled: 'gone' }), { failingAfterSeconds: day, now: NOW }).webhook,
    ).toMatchObject({
      status: 'disabled',
      disabled: 'gone',
    });
  });

  it('shows the secret only when given, and no internal id', () => {
    const v = monitorView(row(), { failingAfterSeconds: day, now: NOW, secret: 'whsec_abc' });
    expect(v.webhook?.secret).toBe('whsec_abc');
    expect(monitorView(row(), { failingAfterSeconds: day, now: NOW }).webhook).not.toHaveProperty('secret');
    const text = JSON.stringify(monitorView(row({ paused: true, next_run_at: null }), { failingAfterSeconds: day }));
    expect(text).not.toMatch(/"(id|workspace_id|api_key_id|last_job_id)"/);
    expect(JSON.parse(text)).toMatchObject({
      paused: true,
      pausedReason: null,
      nextRunAt: null,
      webhook: { url: 'https://hooks.example.test/lss' },
    });
    // Paused by the service (its key revoked): it says why; resumed, the reason is gone.
    expect(
      monitorView(row({ paused: true, paused_reason: 'key_revoked', next_run_at: null }), { failingAfterSeconds: day })
        .pausedReason,
    ).toBe('key_revoked');
    expect(monitorView(row({ paused_reason: 'key_revoked' }), { failingAfterSeconds: day }).pausedReason).toBeNull();
    expect(monitorView(row({ webhook_url: null }), { failingAfterSeconds: day }).webhook).toBeNull();
  });
});
