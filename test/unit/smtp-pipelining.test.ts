// Bytes an SMTP server sends after its 220 to STARTTLS (issue 30 item 9). A server must send
// nothing there: the next bytes are the client's ClientHello and the server's TLS answer
// (RFC 3207 §4, §5). Plain text in between is the STARTTLS response-injection shape of the
// CVE-2011-0411 class: a client that reads it as replies inside TLS has been lied to. The lab's
// smtp-inject.test has one MX that sends a forged EHLO reply in the same write as its 220, and one
// that sends it once the client's TLS bytes arrived. Before: the first was dropped without a word,
// the second was read as TLS and the session ended tls_failed. Now both are recorded as the fact
// pipeliningBeforeTls (bytes, a sample), never part of the TLS session, the handshake completes,
// and the finding smtp_pipelining_before_tls is raised per host.
import net from 'node:net';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { createMailChecks } from '../../src/products/mail/checks.ts';
import { mailLanes } from '../../src/products/mail/lanes.ts';
import type { SmtpProjection } from '../../src/products/mail/schema.ts';
import { createOutboundGuard } from '../../src/net/outbound-guard.ts';
import { smtpSession, DEFAULT_SMTP_LIMITS } from '../../src/smtp/smtp-session.ts';
import { TlsStartGate } from '../../src/smtp/tls-start-gate.ts';
import { SMTP_INJECTED, mailLabPart } from '../lab/mail-lab.ts';
import { mailLab as L } from '../lab/mail-zones.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { labEnv } from '../helpers/lab-runtime.ts';

let lab: RunningLab;
const checks = createMailChecks({
  smtpLimits: { connectMs: 2000, bannerMs: 2000, commandMs: 2000, tlsMs: 4000, quitMs: 300 },
});
const smtpCheck = checks.find((c) => c.name === mailLanes.smtp_starttls.check)!;

beforeAll(async () => {
  lab = await startLab({ parts: [mailLabPart] });
}, 60_000);
afterAll(async () => {
  await lab?.close();
});

function config(): Config {
  return parseConfig({
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    ...labEnv(lab.env),
  });
}

async function starttls(domain: string) {
  const runtime = createProductRuntime(config(), pino({ level: 'silent' }));
  return smtpCheck.run(
    { objectKey: domain, target: domain, params: {} },
    { runtime, signal: new AbortController().signal },
  );
}

describe('bytes after the 220 to STARTTLS', () => {
  it('are recorded as pipeliningBeforeTls, kept out of TLS (the handshake completes), and raise smtp_pipelining_before_tls', async () => {
    const out = await starttls(L.smtpInject);
    const projection = out.projection as unknown as SmtpProjection;
    const sessions = projection.hosts.flatMap((h) => h.sessions.map((s) => ({ host: h.host, ...s })));
    expect(sessions.map((s) => s.host).sort()).toEqual([`mx1.${L.smtpInject}`, `mx2.${L.smtpInject}`]);
    for (const s of sessions) {
      expect(s.state, `${s.host}: ${s.detail}`).toBe('tls');
      expect(s.tls?.hostnameMatch).toBe(true);
      expect(s.pipeliningBeforeTls, s.host).toEqual({
        detected: true,
        bytes: SMTP_INJECTED.length,
        sample: JSON.stringify(SMTP_INJECTED).slice(1, -1),
      });
    }
    const raised = out.findings.filter((f) => f.code === 'smtp_pipelining_before_tls');
    expect(raised.map((f) => f.object.key).sort()).toEqual([`mx1.${L.smtpInject}`, `mx2.${L.smtpInject}`]);
    expect(out.findings.map((f) => f.code)).not.toContain('smtp_starttls_failed');
  });

  it('a server that sends nothing there: detected false, no finding', async () => {
    const out = await starttls(L.good);
    const projection = out.projection as unknown as SmtpProjection;
    const s = projection.hosts[0]!.sessions[0]!;
    expect(s.state).toBe('tls');
    expect(s.pipeliningBeforeTls).toEqual({ detected: false, bytes: 0, sample: null });
    expect(out.findings.map((f) => f.code)).not.toContain('smtp_pipelining_before_tls');
  });

  it('plain text that never turns into TLS is capped: a protocol violation, not a TLS session', async () => {
    // A server that answers STARTTLS 220, and to the client's first TLS bytes plain text forever.
    const server = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.write('220 flood.lab ESMTP\r\n');
      const onLine = (chunk: Buffer) => {
        const line = chunk.toString('latin1');
        if (line.startsWith('EHLO')) socket.write('250-flood.lab\r\n250 STARTTLS\r\n');
        else if (line.startsWith('STARTTLS')) {
          socket.off('data', onLine);
          socket.write('220 go ahead\r\n');
          const flood = () => {
            while (!socket.destroyed && socket.write(`250 ${'x'.repeat(200)}\r\n`));
            if (!socket.destroyed) socket.once('drain', flood);
          };
          socket.once('data', flood);
        }
      };
      socket.on('data', onLine);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const guard = createOutboundGuard({
        allow: ['127.0.0.0/8'],
        resolver: async () => ['127.0.0.1'],
        portMap: new Map([[25, (server.address() as net.AddressInfo).port]]),
      });
      const r = await smtpSession(
        guard,
        { host: 'flood.lab.test', address: '127.0.0.1' },
        { ehloName: 'lss-check.invalid', limits: DEFAULT_SMTP_LIMITS, signal: AbortSignal.timeout(20_000) },
      );
      expect(r.state).toBe('protocol_violation');
      expect(r.tls).toBeNull();
      expect(r.pipeliningBeforeTls?.detected).toBe(true);
      expect(r.pipeliningBeforeTls!.bytes).toBeGreaterThan(DEFAULT_SMTP_LIMITS.maxSessionBytes / 2);
    } finally {
      server.close();
    }
  });
});

describe('TlsStartGate: plain text out, TLS through, however the bytes are cut', () => {
  // A plain-text line never starts with 22 or 21 (the first byte of a server's TLS record).
  const line = fc
    .uint8Array({ minLength: 0, maxLength: 300 })
    .map((b) => Buffer.from(b).filter((x) => x !== 0x0a))
    .filter((b) => b.length === 0 || (b[0] !== 0x16 && b[0] !== 0x15))
    .map((b) => Buffer.concat([b, Buffer.from('\r\n')]));
  const tlsBytes = fc.uint8Array({ minLength: 1, maxLength: 2000 }).map((b) => Buffer.concat([Buffer.from([0x16]), b]));

  it('passes exactly the bytes from the first TLS record on, and counts every plain-text byte before it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 20 }),
        tlsBytes,
        fc.array(fc.integer({ min: 1, max: 512 }), { minLength: 1, maxLength: 20 }),
        fc.nat({ max: 3 }),
        async (lines, tls, cuts, earlyLines) => {
          const early = Buffer.concat(lines.slice(0, earlyLines));
          const later = Buffer.concat(lines.slice(earlyLines));
          const wire = Buffer.concat([later, tls]);
          const socket = new PassThrough();
          const gate = new TlsStartGate(socket as unknown as net.Socket, { maxBytes: 1 << 20, early });
          const passed: Buffer[] = [];
          gate.on('data', (c: Buffer) => passed.push(c));
          for (let at = 0, i = 0; at < wire.length; i++) {
            const n = cuts[i % cuts.length]!;
            socket.write(wire.subarray(at, at + n));
            at += n;
          }
          socket.end();
          await new Promise<void>((r) => gate.once('end', r).resume());
          expect(Buffer.concat(passed).equals(tls)).toBe(true);
          const plain = early.length + later.length;
          expect(gate.plaintext).toMatchObject({ detected: plain > 0, bytes: plain });
          expect((gate.plaintext.sample ?? '').length).toBeLessThanOrEqual(64 * 6);
        },
      ),
      { numRuns: 200 },
    );
  });
});
