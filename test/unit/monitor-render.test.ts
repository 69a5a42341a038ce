// `lss monitor show|list` say why the service paused a monitor (issue 44 item 13: a revoked key).
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import { renderMonitor } from '../../src/client/cli/monitor-commands.ts';
import type { Monitor } from '../../src/client/types.ts';

const c = pc.createColors(false);
const monitor = (over: Partial<Monitor>): Monitor => ({
  monitorId: `mon_${'A'.repeat(26)}`,
  product: 'lookup.domain.v1',
  request: { value: 'lab.test' },
  schedule: { intervalSeconds: 3600 },
  paused: false,
  pausedReason: null,
  nextRunAt: null,
  createdAt: '2026-12-07T00:00:00.000Z',
  webhook: null,
  ...over,
});

describe('renderMonitor', () => {
  it('shows pausedReason beside paused when the service paused it', () => {
    expect(renderMonitor(monitor({ paused: true, pausedReason: 'key_revoked' }), c)).toMatch(
      /│ paused\s+│ true \(key_revoked\)\s+│/,
    );
    expect(renderMonitor(monitor({ paused: true }), c)).toMatch(/│ paused\s+│ true\s+│/);
  });
});
