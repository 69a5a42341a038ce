// Politeness per target address through a real job (issue 32; src/net/address-slots.ts): a deep
// scan of a zone whose 41 hosts all sit on ONE lab address, run by the lane workers the lane
// processes run (workers/start-lane-worker.ts: the process's runtime and outbound guard, built from
// OUTBOUND_CONNECTIONS_PER_ADDRESS), never holds more than the configured connections open to that
// address at once, on either port, while the web lane could run 16 checks at once; and it still
// fetches every host's page. The servers count connections open at once (from accept to the
// response sent or the socket closed, whichever comes first: the client cannot give its slot back
// before either), so the figure never counts a socket the client already let go.
// Fails before: with OUTBOUND_CONNECTIONS_PER_ADDRESS=1000 (no politeness) the web lane opens up
// to 16 at once to the address.
import http from 'node:http';
import net from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { startLab, type LabPartFactory, type RunningLab } from '../lab/serve.ts';
import { labHost } from '../lab/addresses.ts';
import type { ZoneRecord } from '../lab/zones.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { LaneName } from '../../src/queue/streams.ts';

const ZONE = 'polite-one.test';
const ADDRESS = labHost('scan', 141);
const HOSTS = 40;
const PER_ADDRESS = 2;
const LANE_CAPACITY = 16;

/** Connections to ADDRESS open at once, on both ports together, and the requests it answered. */
const stats = { open: 0, most: 0, hosts: new Set<string>() };

function opened(socket: net.Socket): () => void {
  stats.open++;
  stats.most = Math.max(stats.most, stats.open);
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    stats.open--;
  };
  socket.once('close', close);
  return close;
}

const page = (title: string, links: string[]) =>
  `<!doctype html><html><head><title>${title}</title></head><body>${links.map((l) => `<a href="http://${l}/">${l}</a>`).join('\n')}</body></html>`;

/** One address serving every host of the zone over HTTP (a little late, so checks overlap); its TLS port resets. */
const politePart: LabPartFactory = async (ctx) => {
  const closers = new WeakMap<net.Socket, () => void>();
  const web = http.createServer((req, res) => {
    const host = String(req.headers.host ?? '')
      .split(':')[0]!
      .toLowerCase();
    stats.hosts.add(host);
    const links = host === ZONE ? Array.from({ length: HOSTS }, (_, i) => `h${i + 1}.${ZONE}`) : [];
    const body = page(host, links);
    setTimeout(() => {
      res.writeHead(200, {
        'content-type': 'text/html',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      });
      res.end(body);
      res.once('finish', () => closers.get(req.socket)?.());
    }, 60);
  });
  web.on('connection', (s: net.Socket) => closers.set(s, opened(s)));
  const tlsPort = net.createServer((s) => {
    opened(s);
    s.destroy();
  });
  await ctx.listen(80, [{ host: ADDRESS, server: web }]);
  await ctx.listen(443, [{ host: ADDRESS, server: tlsPort }]);
  const records: ZoneRecord[] = [
    {
      name: '@',
      type: 'SOA',
      ttl: 3600,
      data: {
        mname: `ns1.${ZONE}`,
        rname: `hostmaster.${ZONE}`,
        serial: 2026112801,
        refresh: 7200,
        retry: 900,
        expire: 1209600,
        minimum: 300,
      },
    },
    { name: '@', type: 'NS', data: `ns1.${ZONE}` },
    { name: 'ns1', type: 'A', data: ADDRESS },
    { name: '@', type: 'A', data: ADDRESS },
    ...Array.from({ length: HOSTS }, (_, i): ZoneRecord => ({ name: `h${i + 1}`, type: 'A', data: ADDRESS })),
  ];
  return { name: 'polite', zones: [{ origin: ZONE, records }], close: async () => {} };
};

describe('politeness per address, through a scan on the lane workers', () => {
  let lab: RunningLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  const workers: LaneWorkerHandle[] = [];

  beforeAll(async () => {
    lab = await startLab({ parts: [politePart] });
    h = await startHarness({
      ...labEnv(lab.env),
      DNS_TIMEOUT_MS: '700',
      OUTBOUND_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      OUTBOUND_ADDRESS_INTERVAL_MS: '0',
    });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    for (const lane of ['dns', 'mail', 'web', 'domain'] as LaneName[]) {
      workers.push(
        await startLaneWorker(lane, {
          config: h.config,
          log,
          blockMs: 100,
          settings: { LANE_POOL_THREADS: 1, LANE_CONCURRENCY: LANE_CAPACITY, LANE_LAG_TARGET_MS: 0 },
        }),
      );
    }
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  it(`a deep scan of ${HOSTS + 1} hosts on one address never holds more than ${PER_ADDRESS} connections to it`, async () => {
    const t = await fundedTenant(h, 1000, {
      limits: {
        app: { perMinute: 100_000, burst: 10_000 },
        products: { 'scan.recursive.v1': { perMinute: 100_000, perHour: 1_000_000 } },
      },
      acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
    });
    const res = await client(h.app, t.key).post('/v2/scans', {
      profile: 'deep',
      target: { type: 'domain_name', value: ZONE },
      options: { active: false, maxCredits: 500 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = (await pollTerminal(h, t.key, res.body.jobRef, 120_000)).body;
    expect(job.terminal).toBe(true);
    // Every host's page was fetched (the name server's too: a host of the zone on the same address)...
    const names = [ZONE, ...Array.from({ length: HOSTS }, (_, i) => `h${i + 1}.${ZONE}`)];
    expect(names.filter((n) => !stats.hosts.has(n))).toEqual([]);
    // ...never more than the configured connections at once, and the limit was reached (the checks did overlap).
    expect(stats.most).toBeLessThanOrEqual(PER_ADDRESS);
    expect(stats.most).toBe(PER_ADDRESS);
    expect(stats.open).toBe(0);
  }, 180_000);
});
