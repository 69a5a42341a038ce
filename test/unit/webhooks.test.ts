// Webhook signing (Standard Webhooks), the secrets' sealing at rest, the receiver's verifyWebhook
// and CONTRACT §14's retry schedule, as pure functions.
import { describe, expect, it } from 'vitest';
import { generateSecret, SecretBox, signature, signatureHeader } from '../../src/jobs/monitors/webhook-secrets.ts';
import {
  CONTRACT_SCHEDULE_SECONDS,
  nextAttemptAt,
  retryAfterSeconds,
  retryScheduleOf,
} from '../../src/jobs/monitors/retry-schedule.ts';
import { LssWebhookError, verifyWebhook, verifyWebhookRequest } from '../../src/client/webhooks.ts';

// The Standard Webhooks specification's own example (standard-webhooks/standard-webhooks, spec).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('signing', () => {
  it("signs as the specification's example does", () => {
    expect(signature(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('signs with every secret of a rotation, space-separated', () => {
    const other = generateSecret();
    const header = signatureHeader([VECTOR.secret, other], VECTOR.id, VECTOR.timestamp, VECTOR.body);
    expect(header.split(' ')).toEqual([VECTOR.signature, signature(other, VECTOR.id, VECTOR.timestamp, VECTOR.body)]);
  });

  it('makes whsec_ secrets of 32 random bytes', () => {
    const s = generateSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(generateSecret()).not.toBe(s);
  });
});

describe('SecretBox (WEBHOOK_SECRET_KEY)', () => {
  const key = 'k'.repeat(40);
  const mon = `mon_${'A'.repeat(26)}`;
  it('seals so that the secret is not in the bytes, and opens with the same key or as the previous one', () => {
    const s = generateSecret();
    const sealed = new SecretBox(key).seal(s, mon);
    expect(sealed.toString('latin1')).not.toContain(s.slice(6));
    expect(new SecretBox(key).open(sealed, mon)).toBe(s);
    expect(new SecretBox('n'.repeat(40), key).open(sealed, mon)).toBe(s);
    expect(new SecretBox('n'.repeat(40)).open(sealed, mon)).toBeNull();
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 20]! ^= 1;
    expect(new SecretBox(key).open(tampered, mon)).toBeNull();
    expect(new SecretBox(key).openText(new SecretBox(key).sealText(s, mon), mon)).toBe(s);
    expect(new SecretBox(key).openText('whsec_plain', mon)).toBeNull();
  });

  it('binds a sealed secret to its monitor: copied to another monitor, it does not open', () => {
    const s = generateSecret();
    const box = new SecretBox(key);
    const sealed = box.seal(s, mon);
    expect(box.open(sealed, `mon_${'B'.repeat(26)}`)).toBeNull();
    expect(box.openText(box.sealText(s, mon), `mon_${'B'.repeat(26)}`)).toBeNull();
    // Current: sealed under WEBHOOK_SECRET_KEY and bound; under the previous key it is not (a rekey re-seals it).
    expect(box.inspect(sealed, mon)).toEqual({ secret: s, current: true });
    expect(new SecretBox('n'.repeat(40), key).inspect(sealed, mon)).toEqual({ secret: s, current: false });
  });
});

describe('verifyWebhook', () => {
  const now = VECTOR.timestamp * 1000;
  const headers = {
    'webhook-id': VECTOR.id,
    'webhook-timestamp': String(VECTOR.timestamp),
    'webhook-signature': VECTOR.signature,
  };
  const reasonOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(LssWebhookError);
      return (err as LssWebhookError).reason;
    }
    return 'accepted';
  };

  it('verifyWebhookRequest returns the webhook-id to de-duplicate by: a captured request replays within the tolerance (issue 45 item 12)', () => {
    const first = verifyWebhookRequest(VECTOR.secret, headers, VECTOR.body, { now });
    expect(first).toEqual({ webhookId: VECTOR.id, timestamp: VECTOR.timestamp, event: { test: 2432232314 } });
    // The same bytes a minute later still verify: only the id tells the receiver it is a replay.
    const replay = verifyWebhookRequest(VECTOR.secret, headers, VECTOR.body, { now: now + 60_000 });
    expect(replay.webhookId).toBe(first.webhookId);
  });

  it('accepts the example, from a plain record, a fetch Headers or mixed-case names, body as text or bytes', () => {
    expect(verifyWebhook(VECTOR.secret, headers, VECTOR.body, { now })).toEqual({ test: 2432232314 });
    expect(verifyWebhook(VECTOR.secret, new Headers(headers), Buffer.from(VECTOR.body), { now })).toEqual({
      test: 2432232314,
    });
    const mixed = {
      'Webhook-Id': VECTOR.id,
      'WEBHOOK-TIMESTAMP': String(VECTOR.timestamp),
      'webhook-signature': [VECTOR.signature],
    };
    expect(verifyWebhook(VECTOR.secret, mixed, VECTOR.body, { now })).toEqual({ test: 2432232314 });
  });

  it('accepts when any v1 signature matches (a rotation) and ignores other versions', () => {
    const both = {
      ...headers,
      'webhook-signature': `v2,xxxx v1,${Buffer.alloc(32).toString('base64')} ${VECTOR.signature}`,
    };
    expect(reasonOf(() => verifyWebhook(VECTOR.secret, both, VECTOR.body, { now }))).toBe('accepted');
  });

  it('refuses another secret, a changed body, id or timestamp, a stale or future timestamp, missing headers', () => {
    expect(reasonOf(() => verifyWebhook(generateSecret(), headers, VECTOR.body, { now }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(VECTOR.secret, headers, `${VECTOR.body} `, { now }))).toBe('bad_signature');
    expect(
      reasonOf(() => verifyWebhook(VECTOR.secret, { ...headers, 'webhook-id': 'msg_other' }, VECTOR.body, { now })),
    ).toBe('bad_signature');
    const later = { ...headers, 'webhook-timestamp': String(VECTOR.timestamp + 1) };
    expect(reasonOf(() => verifyWebhook(VECTOR.secret, later, VECTOR.body, { now }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(VECTOR.secret, headers, VECTOR.body, { now: now + 301_000 }))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(reasonOf(() => verifyWebhook(VECTOR.secret, headers, VECTOR.body, { now: now - 301_000 }))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(
      reasonOf(() => verifyWebhook(VECTOR.secret, headers, VECTOR.body, { now: now + 301_000, toleranceSeconds: 600 })),
    ).toBe('accepted');
    expect(reasonOf(() => verifyWebhook(VECTOR.secret, { 'webhook-id': VECTOR.id }, VECTOR.body, { now }))).toBe(
      'missing_headers',
    );
    expect(
      reasonOf(() => verifyWebhook(VECTOR.secret, { ...headers, 'webhook-timestamp': '1e9' }, VECTOR.body, { now })),
    ).toBe('bad_timestamp');
  });
});

describe('retry schedule (CONTRACT §14)', () => {
  const contract = retryScheduleOf({
    WEBHOOK_RETRY_SCHEDULE_SECONDS: undefined,
    WEBHOOK_RETRY_WINDOW_SECONDS: undefined,
  });

  it('retries after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 3 h until 24 h have passed, then fails', () => {
    expect(contract.delays).toBe(CONTRACT_SCHEDULE_SECONDS);
    const start = 0;
    let t = start;
    const waits: number[] = [];
    for (let attempts = 1; ; attempts++) {
      const next = nextAttemptAt(contract, attempts, t, start);
      if (next === null) break;
      waits.push((next - t) / 1000);
      t = next;
    }
    expect(waits).toEqual([5, 30, 120, 600, 1800, 3600, 10_800, 10_800, 10_800, 10_800, 10_800, 10_800, 10_800]);
    // The last attempt falls inside the day; the next step would leave it.
    expect(t).toBeLessThanOrEqual(24 * 3600_000);
    expect(t + 10_800_000).toBeGreaterThan(24 * 3600_000);
  });

  it("honours a 429/503's Retry-After within the schedule: never shorter than the step, at most 3 h, never past the window", () => {
    expect(nextAttemptAt(contract, 1, 0, 0, 60)).toBe(60_000);
    expect(nextAttemptAt(contract, 1, 0, 0, 1)).toBe(5_000);
    expect(nextAttemptAt(contract, 1, 0, 0, 86_400)).toBe(10_800_000);
    const nearEnd = 24 * 3600_000 - 60_000;
    expect(nextAttemptAt(contract, 3, nearEnd, 0, 3600)).toBe(24 * 3600_000);
    expect(nextAttemptAt(contract, 3, 24 * 3600_000, 0)).toBeNull();
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterSeconds('120', 0)).toBe(120);
    expect(retryAfterSeconds(new Date(90_000).toUTCString(), 0)).toBe(90);
    expect(retryAfterSeconds('soon', 0)).toBeUndefined();
    expect(retryAfterSeconds(undefined, 0)).toBeUndefined();
  });

  it('takes a shortened schedule from the test-only config', () => {
    const s = retryScheduleOf({ WEBHOOK_RETRY_SCHEDULE_SECONDS: [1, 2], WEBHOOK_RETRY_WINDOW_SECONDS: 10 });
    expect([1, 2, 3].map((n) => nextAttemptAt(s, n, 0, 0))).toEqual([1000, 2000, 2000]);
    expect(nextAttemptAt(s, 1, 9500, 0)).toBeNull();
  });
});
