// A fetch made on a target's say-so stays on the passive ports and tells nothing of the port's
// state (issue 30 item 1). Before, a BIMI record made the passive mail lookup a port scanner: the
// logo and mark-certificate fetches took any port, and their failure codes reached the projection
// (`l=https://victim:22/x.svg`: open → certificate_invalid, closed → connection_failed, filtered →
// timeout). Now the outbound guard's one rule (src/net/passive-ports.ts) holds every fetch hop to
// 80, 443, 8080 and 8443 unless the caller says the work is active (ports: 'any'), redirects
// included, refused before any connection; and a fetch of a URL the target's data names
// (fetchReferenced: BIMI l= and a=, the MTA-STS policy) reports every failure to get an answer
// from the hop as one code, `unreachable`, whether the port was open to something else, closed
// or silent. Only loopback: listeners here count the connections they get.
import net from 'node:net';
import http from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import {
  createOutboundGuard,
  OutboundFetchError,
  OutboundRefusedError,
  type OutboundGuard,
} from '../../src/net/outbound-guard.ts';
import type { CheckContext } from '../../src/products/kit/product-contract.ts';
import { bimiEvidence } from '../../src/products/mail/bimi-evidence.ts';
import { LaneOutput } from '../../src/products/mail/output.ts';

const listen = async (s: net.Server) => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as net.AddressInfo).port;
};

describe('fetches on a target’s say-so: passive ports, one failure code', () => {
  /** Open to something that is not the web (an SSH banner), counting connections. */
  let sshPort: number;
  let sshConnections = 0;
  const ssh = net.createServer((s) => {
    sshConnections++;
    s.on('error', () => {});
    s.end('SSH-2.0-OpenSSH_9.6\r\n');
  });
  /** Accepts and never speaks (what a filtering middlebox looks like from here, within a deadline). */
  let stallPort: number;
  const stall = net.createServer((s) => s.on('error', () => {}));
  /** Every connection any listener here accepted, destroyed at the end so the listeners can close. */
  const accepted = new Set<net.Socket>();
  /** Nothing listens. */
  let closedPort: number;
  /** "Port 8080": redirects to the SSH port. */
  let pagePort: number;
  const page = http.createServer((_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${sshPort}/` }).end();
  });

  const guardFor = (portMap: Array<[number, number]>): OutboundGuard =>
    createOutboundGuard({
      allow: ['127.0.0.0/8'],
      resolver: async (host) => {
        throw new Error(`no names here (${host})`);
      },
      portMap: new Map(portMap),
    });

  beforeAll(async () => {
    for (const s of [ssh, stall, page as unknown as net.Server]) s.on('connection', (c) => accepted.add(c));
    sshPort = await listen(ssh);
    stallPort = await listen(stall);
    pagePort = await listen(page as unknown as net.Server);
    const gone = net.createServer();
    closedPort = await listen(gone);
    await new Promise((r) => gone.close(r));
  });

  afterAll(async () => {
    for (const s of accepted) s.destroy();
    for (const s of [ssh, stall, page as unknown as net.Server]) {
      (s as http.Server).closeAllConnections?.();
      await new Promise((r) => s.close(r));
    }
  });

  it('a URL on another port is refused before any connection: open and closed get the same answer', async () => {
    const guard = guardFor([]);
    const before = sshConnections;
    const answers = await Promise.all(
      [sshPort, closedPort].map((port) =>
        guard.fetch(`http://127.0.0.1:${port}/x`, { timeoutMs: 3000 }).catch((e: unknown) => e),
      ),
    );
    for (const a of answers) expect(a).toMatchObject({ name: 'OutboundRefusedError', reason: 'port_not_allowed' });
    expect(sshConnections).toBe(before);
    // Active work says so and may connect anywhere.
    await guard.fetch(`http://127.0.0.1:${sshPort}/x`, { timeoutMs: 3000, ports: 'any' }).catch(() => null);
    expect(sshConnections).toBe(before + 1);
  });

  it('a redirect to a port outside them is not followed', async () => {
    const guard = guardFor([[8080, pagePort]]);
    const before = sshConnections;
    for (const fetch of [guard.fetch, guard.fetchReferenced]) {
      const err = await fetch('http://127.0.0.1:8080/', { timeoutMs: 3000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OutboundRefusedError);
      expect(err).toMatchObject({ reason: 'port_not_allowed' });
      expect((err as OutboundRefusedError).hops.map((h) => h.status)).toEqual([302]);
    }
    expect(sshConnections).toBe(before);
  });

  it("ports 'configured' (RDAP): the configured server's port, and redirects to its origin; elsewhere passive only (issue 45 item 9)", async () => {
    const guard = guardFor([]);
    const before = sshConnections;
    // The configured server (pagePort, not a passive port) redirects to another port: refused.
    const err = await guard
      .fetch(`http://127.0.0.1:${pagePort}/`, { timeoutMs: 3000, ports: 'configured' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'OutboundRefusedError', reason: 'port_not_allowed' });
    expect((err as OutboundRefusedError).hops.map((h) => h.status)).toEqual([302]);
    expect(sshConnections).toBe(before);
  });

  it('on a passive port, open to something else, closed and silent are one failure: unreachable', async () => {
    const kinds = await Promise.all(
      [sshPort, closedPort, stallPort].map(async (port) => {
        const guard = guardFor([[443, port]]);
        const err = await guard
          .fetchReferenced('https://127.0.0.1/logo.svg', {
            timeoutMs: 2000,
            connectTimeoutMs: 700,
            headersTimeoutMs: 700,
          })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OutboundFetchError);
        return (err as OutboundFetchError).kind;
      }),
    );
    expect(kinds).toEqual(['unreachable', 'unreachable', 'unreachable']);
  });

  it('the BIMI evidence of a record naming other ports: the same limitation for both, no connection', async () => {
    const guard = guardFor([]);
    const config = parseConfig({
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'redis://x',
      KEY_PEPPER: 'x'.repeat(32),
      CURSOR_SECRET: 'y'.repeat(32),
      WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    });
    const ctx: CheckContext = {
      runtime: { config, log: pino({ level: 'silent' }), services: { outbound: guard } },
      signal: AbortSignal.timeout(20_000),
    };
    const before = sshConnections;
    const out = new LaneOutput();
    const { logo, certificate } = await bimiEvidence(
      ctx,
      out,
      { type: 'mail_posture', key: 'victim.example' },
      {
        domain: 'victim.example',
        recordDomain: 'victim.example',
        location: `https://127.0.0.1:${sshPort}/x.svg`,
        authority: `https://127.0.0.1:${closedPort}/vmc.pem`,
        fetchTimeoutMs: 3000,
      },
    );
    expect(sshConnections).toBe(before);
    expect(logo?.failure).toBe('port_not_allowed');
    expect(certificate?.failure).toBe('port_not_allowed');
    expect(out.findings).toEqual([]);
    expect(out.limitations.map((l) => l.code).sort()).toEqual([
      'bimi_certificate_unreachable',
      'bimi_logo_unreachable',
    ]);
  });
});
