// A monitor run refused for a retryable reason is deferred within its interval (issue 44, item 6),
// and the delivery worker shares slots by endpoint, the webhook URL's host and port (item 8).
import { describe, expect, it } from 'vitest';
import { deferredUntil } from '../../src/jobs/monitors/scheduler.ts';
import { endpointOf } from '../../src/jobs/monitors/delivery-worker.ts';

describe('deferredUntil', () => {
  const now = Date.UTC(2026, 0, 1, 12);
  const run = (deferrals: number, dueAgoMs = 0) => ({ dueAt: new Date(now - dueAgoMs), deferrals });

  it("follows the refusal's Retry-After, with up to half of it again as jitter", () => {
    expect(deferredUntil(run(0), 3600, 6, now, () => 0)!.getTime()).toBe(now + 6000);
    expect(deferredUntil(run(0), 3600, 6, now, () => 0.999)!.getTime()).toBe(now + 6000 + 2997);
  });

  it('spreads runs refused together over the jitter window', () => {
    const at = new Set(
      Array.from({ length: 20 }, (_, i) => deferredUntil(run(0), 3600, 6, now, () => i / 20)!.getTime()),
    );
    expect(at.size).toBe(20);
  });

  it('backs off from 5 s, doubling, without a Retry-After; and spaces a refusal that goes on by the back-off too', () => {
    expect(deferredUntil(run(0), 3600, undefined, now, () => 0)!.getTime()).toBe(now + 5000);
    expect(deferredUntil(run(2), 3600, undefined, now, () => 0)!.getTime()).toBe(now + 20_000);
    expect(deferredUntil(run(3), 3600, 1, now, () => 0)!.getTime()).toBe(now + 40_000);
    expect(deferredUntil(run(20), 30 * 86_400, undefined, now, () => 0)!.getTime()).toBe(now + 900_000);
  });

  it('gives up (null: skipped) when the retry would not come before the next due time', () => {
    expect(deferredUntil(run(0, 3597_000), 3600, 6, now, () => 0)).toBeNull();
    expect(deferredUntil(run(0, 3500_000), 3600, 6, now, () => 0)).not.toBeNull();
  });
});

describe('endpointOf', () => {
  it("is the URL's host and port: monitors posting to one receiver share it", () => {
    expect(endpointOf(1, 'https://Hooks.Example.test/a')).toBe('hooks.example.test');
    expect(endpointOf(2, 'https://hooks.example.test/b?x=1')).toBe('hooks.example.test');
    expect(endpointOf(3, 'https://hooks.example.test:8443/a')).toBe('hooks.example.test:8443');
    expect(endpointOf(4, null)).toBe('monitor:4');
  });
});
