// Issue 23: the resolver's readiness must not stick at `down`. It opens after 20 consecutive
// unreachable queries; the servers then come back and NOTHING queries (a web process refuses DNS
// lookups while its resolver is down, so no traffic could reset a counter): readiness must still
// be `ready` again within 2 s. Real sockets, the real lab DNS server, on loopback.
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { StubResolver } from '../../src/dns/stub-resolver.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labNames as n } from '../lab/zones.ts';
import { freePort } from '../helpers/processes.ts';

let lab: LabDns | undefined;
let resolver: StubResolver | undefined;

afterEach(async () => {
  resolver?.close();
  await lab?.close();
  lab = undefined;
});

/** A loopback port that is free for UDP (and TCP: the lab binds both). */
async function freeDnsPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const s = dgram.createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.bind(port, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((r) => (ok ? s.close(() => r()) : r()));
    if (ok) return port;
  }
}

describe('StubResolver readiness after an outage', () => {
  it('down after 20 unreachable queries; ready again within 2 s of the server returning, without a single query', async () => {
    const port = await freeDnsPort();
    resolver = new StubResolver({ servers: [{ host: '127.0.0.1', port }], timeoutMs: 500 });
    // Nothing listens: every query fails outright (ICMP port unreachable).
    for (let i = 0; i < 20; i++) expect((await resolver.query(n.apex, 'A')).outcome).not.toBe('answer');
    expect(resolver.readiness()).toBe('down');

    lab = await startLabDns({ port });
    const back = performance.now();
    // No query from here on: only the resolver's own probes may notice the server.
    let readyAfterMs: number | null = null;
    while (performance.now() - back < 2500) {
      if (resolver.readiness() === 'ready') {
        readyAfterMs = performance.now() - back;
        break;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(readyAfterMs, 'readiness came back without traffic').not.toBeNull();
    expect(readyAfterMs!).toBeLessThanOrEqual(2000);
    // And it answers.
    expect((await resolver.query(n.apex, 'A')).outcome).toBe('answer');
  });

  it('stays down while the server stays away, probing about once a second (bounded, not per query)', async () => {
    const port = await freeDnsPort();
    const probes: number[] = [];
    const sink = dgram.createSocket('udp4'); // counts datagrams, never answers
    await new Promise<void>((r) => sink.bind(port, '127.0.0.1', () => r()));
    sink.on('message', () => probes.push(performance.now()));
    try {
      resolver = new StubResolver({ servers: [{ host: '127.0.0.1', port }], timeoutMs: 100, downAfter: 3 });
      for (let i = 0; i < 3; i++) await resolver.query(n.apex, 'A');
      expect(resolver.readiness()).toBe('down');
      const before = probes.length;
      await new Promise((r) => setTimeout(r, 3300));
      expect(resolver.readiness()).toBe('down');
      // Each probe is one query with a retransmission (two datagrams); about 3 probes in 3.3 s.
      const sent = probes.length - before;
      expect(sent).toBeGreaterThanOrEqual(4);
      expect(sent).toBeLessThanOrEqual(10);
    } finally {
      await new Promise<void>((r) => sink.close(() => r()));
    }
  });
});
