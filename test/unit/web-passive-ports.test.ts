// A passive web lookup stays on the web's own ports (issue 18 item 5): its input URL must use 80,
// 443, 8080 or 8443 unless the request is authorized (admission: 403 active_authorization_required,
// see test/integration/target-names.test.ts), and no redirect hop may leave them: a page on an
// allowed port that redirects to port 22 must not make the lookup connect there (its failure would
// tell open, closed and filtered ports apart). Real loopback servers; the logical ports reach them
// through OUTBOUND_PORT_MAP, as in the lab.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { createOutboundGuard, OutboundRefusedError, type OutboundGuard } from '../../src/net/outbound-guard.ts';
import type { ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { createWebChecks } from '../../src/products/web/checks.ts';
import { planWeb, webProduct } from '../../src/products/web/index.ts';
import { PASSIVE_WEB_PORTS } from '../../src/products/web/passive-ports.ts';

describe('passive web ports', () => {
  let page: http.Server;
  let ssh: http.Server;
  let sshRequests = 0;
  let guard: OutboundGuard;
  let activeGuard: OutboundGuard;
  let runtime: ProductRuntime;

  const listen = async (s: http.Server) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return (s.address() as AddressInfo).port;
  };

  beforeAll(async () => {
    // "Port 8080" answers with a redirect to "port 22" on the same host; "port 22" counts requests.
    page = http.createServer((req, res) => {
      if (req.url === '/same-port') res.writeHead(302, { location: 'http://127.0.0.1:8080/done' }).end();
      else if (req.url === '/done') res.writeHead(200, { 'content-type': 'text/html' }).end('<html>ok</html>');
      // An authorized lookup's page: a hop to port 22 of a name inside the approved scope.
      else if (req.url === '/named') res.writeHead(302, { location: 'http://ssh.scope.test:22/' }).end();
      else res.writeHead(302, { location: 'http://127.0.0.1:22/' }).end();
    });
    ssh = http.createServer((_req, res) => {
      sshRequests++;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('SSH-2.0-OpenSSH_9.6');
    });
    const portMap = new Map([
      [8080, await listen(page)],
      [22, await listen(ssh)],
    ]);
    guard = createOutboundGuard({
      allow: ['127.0.0.0/8'],
      resolver: async (host) => {
        throw new Error(`no names here (${host})`);
      },
      portMap,
    });
    // Authorized work goes through the active guard (ACTIVE_DENY_CIDRS), names of the approved
    // scope resolving to loopback.
    activeGuard = createOutboundGuard({
      allow: ['127.0.0.0/8'],
      resolver: async (host) => {
        if (host.endsWith('.scope.test')) return ['127.0.0.1'];
        throw new Error(`no names here (${host})`);
      },
      portMap,
      deny: ['169.254.0.0/16'],
    });
    const config = parseConfig({
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'redis://x',
      KEY_PEPPER: 'x'.repeat(32),
      CURSOR_SECRET: 'y'.repeat(32),
      WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    });
    runtime = { config, log: pino({ level: 'silent' }), services: { outbound: guard, activeOutbound: activeGuard } };
  });

  afterAll(async () => {
    for (const s of [page, ssh]) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('the guard refuses a hop to a port outside the passive ones before it connects, keeping the hops before it', async () => {
    const before = sshRequests;
    const err = await guard.fetch('http://127.0.0.1:8080/', { timeoutMs: 3000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundRefusedError);
    expect(err).toMatchObject({ reason: 'port_not_allowed', host: '127.0.0.1' });
    expect((err as OutboundRefusedError).hops.map((h) => h.status)).toEqual([302]);
    expect(sshRequests).toBe(before);
    // A first hop on such a port is refused the same way.
    await expect(guard.fetch('http://127.0.0.1:22/')).rejects.toMatchObject({
      reason: 'port_not_allowed',
    });
    expect(sshRequests).toBe(before);
    // Redirects that stay on passive ports are followed; with ports: 'any' every port is (authorized work).
    const same = await guard.fetch('http://127.0.0.1:8080/same-port');
    expect(same.status).toBe(200);
    expect(PASSIVE_WEB_PORTS).toEqual([80, 443, 8080, 8443]);
    const any = await guard.fetch('http://127.0.0.1:8080/', { timeoutMs: 3000, ports: 'any' });
    expect(any.status).toBe(200);
    expect(sshRequests).toBe(before + 1);
  });

  it("a passive lookup's http check does not follow the redirect to port 22; an authorized one does, inside its approved scope", async () => {
    const http = createWebChecks({ fetchTimeoutMs: 3000 }).find((c) => c.name === 'web.http')!;
    const run = (authorized: boolean) => {
      const plan = authorized
        ? planWeb(
            { url: 'http://app.scope.test:8080/named', authorized },
            { activeScope: { domain: 'scope.test', proof: 'operator_override' } },
          )[0]!
        : planWeb({ url: 'http://127.0.0.1:8080/', authorized })[0]!;
      return http.run(
        { objectKey: plan.objectKey, target: plan.objectKey, params: plan.params ?? {} },
        { runtime, signal: new AbortController().signal },
      );
    };
    const before = sshRequests;
    const passive = await run(false);
    expect(sshRequests).toBe(before);
    expect(passive.status).toBe('unavailable');
    expect(passive.reason).toBe('port_not_allowed');
    expect(JSON.stringify(passive.limitations)).toContain('port_not_allowed');

    await run(true);
    expect(sshRequests).toBeGreaterThan(before);
  });

  it('admission: a port outside the passive ones needs the request authorization; with it the active gates apply', () => {
    const work = (url: string, authorized = false) => webProduct.activeWork!({ url, authorized });
    for (const url of [
      'https://example.com/',
      'http://example.com/',
      'http://example.com:8080/',
      'https://example.com:8443/',
      'https://example.com:443/',
    ])
      expect(work(url), url).toMatchObject({ active: false, authorizationMissing: false });
    for (const url of ['https://example.com:22/', 'http://example.com:25/', 'http://example.com:6379/x'])
      expect(work(url), url).toMatchObject({ active: false, authorizationMissing: true });
    expect(work('https://example.com:22/', true)).toMatchObject({
      active: true,
      authorizationMissing: false,
      targetHost: 'example.com',
    });
  });
});
