// Issue 23: an RDAP server that cannot be reached opens its breaker after five consecutive
// failures (lookups then answer unavailable at once, without a connection), and the breaker
// closes by itself within 2 s of the server's return, without a single lookup. The real RDAP lab
// server on a loopback port, started after the failures on the port that refused them.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { createResolver } from '../../src/dns/stub-resolver.ts';
import { createOutboundGuard } from '../../src/net/outbound-guard.ts';
import { lookupDomain, RDAP_FAILURES_TO_OPEN, rdapServerState, resetRdapServerHealth } from '../../src/rdap/client.ts';
import { freePort } from '../helpers/processes.ts';
import { rdapNames as n } from '../lab/rdap-fixtures.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';

let lab: LabRdap | undefined;

afterEach(async () => {
  resetRdapServerHealth();
  await lab?.close();
  lab = undefined;
});

function lookupVia(baseUrl: string, env: Record<string, string> = {}) {
  const config = parseConfig({
    ...env,
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    RDAP_BASE_URL: baseUrl,
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
  });
  const guard = createOutboundGuard({
    allow: config.ALLOW_PRIVATE_TARGETS,
    resolver: createResolver(config),
    portMap: config.OUTBOUND_PORT_MAP,
  });
  return (name: string) => lookupDomain(name, { config, guard, timeoutMs: 1000 });
}

describe('RDAP server breaker', () => {
  it('opens after five unreachable lookups, answers at once while open, closes within 2 s of the server returning', async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}/`;
    const lookup = lookupVia(baseUrl);
    for (let i = 0; i < RDAP_FAILURES_TO_OPEN; i++) {
      expect(await lookup(n.registered)).toEqual({ status: 'unavailable', reason: 'rdap_unreachable' });
    }
    expect(rdapServerState(baseUrl)).not.toBe('closed');

    lab = await startLabRdap({ port });
    const back = performance.now();
    // Open: answered without asking the server (it would answer now).
    expect(await lookup(n.registered)).toEqual({ status: 'unavailable', reason: 'rdap_unreachable' });
    expect(lab.requests.filter((r) => r.startsWith('/domain/'))).toEqual([]);

    // No lookup from here on: only the breaker's probe may notice the server.
    let closedAfterMs: number | null = null;
    while (performance.now() - back < 2500) {
      if (rdapServerState(baseUrl) === 'closed') {
        closedAfterMs = performance.now() - back;
        break;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(closedAfterMs, 'closed without traffic').not.toBeNull();
    expect(closedAfterMs!).toBeLessThanOrEqual(2000);
    expect(lab.requests).toContain('/help');
    expect(await lookup(n.registered)).toMatchObject({ status: 'completed', data: { ldhName: n.registered } });
  });

  it("a redirect hop that cannot be reached is charged to the hop's server, never to the first server (issue 31)", async () => {
    // The registrar's RDAP server the registry redirects to: gone. On port 80, as RDAP's hops stay
    // on the passive ports (issue 45 item 9); the lab's port map sends 80 to a closed port.
    const closed = await freePort();
    const awayBase = 'http://127.0.0.1/';
    const away = 'lab-rdap-away.test';
    lab = await startLabRdap({ redirects: { [away]: `${awayBase}domain/${away}` } });
    const lookup = lookupVia(lab.baseUrl, { OUTBOUND_PORT_MAP: `80=${closed}` });
    for (let i = 0; i < RDAP_FAILURES_TO_OPEN + 2; i++) {
      expect(await lookup(away)).toEqual({ status: 'unavailable', reason: 'rdap_unreachable' });
    }
    // The registry answered every time (302): its breaker stays closed, its other names are served.
    expect(rdapServerState(lab.baseUrl)).toBe('closed');
    expect(await lookup(n.registered)).toMatchObject({ status: 'completed', data: { ldhName: n.registered } });
    // The unreachable hop's own server is the one that opened.
    expect(rdapServerState(awayBase)).not.toBe('closed');
  });

  it('a server answering with errors is reachable: its breaker stays closed', async () => {
    lab = await startLabRdap();
    const lookup = lookupVia(lab.baseUrl);
    for (let i = 0; i < RDAP_FAILURES_TO_OPEN + 2; i++) {
      expect(await lookup(n.serverError)).toEqual({ status: 'unavailable', reason: 'rdap_unreachable' });
    }
    expect(rdapServerState(lab.baseUrl)).toBe('closed');
    expect(lab.requests.filter((r) => r.startsWith('/domain/'))).toHaveLength(RDAP_FAILURES_TO_OPEN + 2);
  });
});
