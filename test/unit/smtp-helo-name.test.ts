// Issue 18 item 5: the mail lane's EHLO announces SMTP_HELO_NAME (a neutral default), never this
// machine's host name. The lab's SMTP servers record the EHLO argument they receive; the real
// smtp_starttls check runs against them through the real resolver and outbound guard.
import os from 'node:os';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { createMailChecks } from '../../src/products/mail/checks.ts';
import { mailLanes } from '../../src/products/mail/lanes.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { mailLab as L } from '../lab/mail-zones.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { labEhloArguments } from '../lab/smtp-server.ts';
import { labEnv } from '../helpers/lab-runtime.ts';

let lab: RunningLab;
const checks = createMailChecks({
  smtpLimits: { connectMs: 1000, bannerMs: 1000, commandMs: 1000, tlsMs: 2000, quitMs: 300 },
});
const smtpCheck = checks.find((c) => c.name === mailLanes.smtp_starttls.check)!;

beforeAll(async () => {
  lab = await startLab({ parts: [mailLabPart] });
}, 60_000);
afterAll(async () => {
  await lab?.close();
});

function configWith(extra: Record<string, string> = {}): Config {
  return parseConfig({
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    ...labEnv(lab.env),
    DNS_TIMEOUT_MS: '500',
    ...extra,
  });
}

async function ehloSentFor(config: Config): Promise<string[]> {
  const before = labEhloArguments.length;
  const runtime = createProductRuntime(config, pino({ level: 'silent' }));
  const out = await smtpCheck.run(
    { objectKey: L.good, target: L.good, params: {} },
    { runtime, signal: new AbortController().signal },
  );
  expect(out.status).toBe('completed');
  return labEhloArguments.slice(before);
}

describe('SMTP_HELO_NAME', () => {
  it('by default EHLO says lss-check.invalid, never the host name', async () => {
    const sent = await ehloSentFor(configWith());
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent)).toEqual(new Set(['lss-check.invalid']));
    expect(sent).not.toContain(os.hostname());
  });

  it('a configured name is what every EHLO says', async () => {
    const sent = await ehloSentFor(configWith({ SMTP_HELO_NAME: 'mail-check.lss.example' }));
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent)).toEqual(new Set(['mail-check.lss.example']));
  });

  it.each([
    ['a name with CRLF (SMTP injection)', 'a.example\r\nMAIL FROM:<x@y>'],
    ['a space', 'a example.com'],
    ['one label', 'localhost'],
    ['an underscore', 'a_b.example'],
    ['a label over 63 characters', `${'a'.repeat(64)}.example`],
    ['a leading hyphen', '-a.example'],
  ])('refuses %s at start', (_why, value) => {
    expect(() => configWith({ SMTP_HELO_NAME: value })).toThrow(/SMTP_HELO_NAME/);
  });
});
