// The whole service in one test process, listening on 127.0.0.1 for clients that speak HTTP (the
// SDK, the lss CLI as a child process, a browser): the real app over the run's database and Redis
// prefix, an orchestrator and a domain lane worker, pointed at the loopback DNS and RDAP labs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createTenant, startHarness, type Harness, type Tenant } from './harness.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { CreateWorkspaceInput } from '../../src/auth/tenancy-repo.ts';
import type { RateOverrides } from '../../src/ratelimit/policies.ts';
import type { Scope } from '../../src/auth/principal.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

/** Limits no test here reaches unless it sets its own. */
export const GENEROUS: RateOverrides = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: Object.fromEntries(
    ['lookup.domain.v1', 'lookup.dns.v1', 'lookup.mac.v1'].map((p) => [p, { perMinute: 100_000, perHour: 1_000_000 }]),
  ),
};

export interface ServiceStack {
  h: Harness;
  /** http://127.0.0.1:<port> of the app. */
  url: string;
  tenant(
    opts?: Partial<CreateWorkspaceInput> & { credits?: number; scopes?: Scope[]; limits?: RateOverrides },
  ): Promise<Tenant & { wsId: number }>;
  close(): Promise<void>;
}

export async function startServiceStack(env: Record<string, string> = {}): Promise<ServiceStack> {
  const dns: LabDns = await startLabDns({ zones: [...labZones, ...domainZones] });
  const rdap: LabRdap = await startLabRdap();
  const h = await startHarness({
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '1000',
    RDAP_BASE_URL: rdap.baseUrl,
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
    ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    CANCEL_GRACE_MS: '1000',
    SHUTDOWN_TIMEOUT_MS: '1000',
    ...env,
  });
  const log = pino({ level: 'silent' });
  const orchestrator: OrchestratorHandle = await startOrchestrator({
    config: h.config,
    log,
    timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
  });
  const worker: LaneWorkerHandle = await startLaneWorker('domain', { config: h.config, log, blockMs: 200 });
  await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  const server = http.createServer(h.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    h,
    url,
    async tenant(opts = {}) {
      const { credits = 0, ...rest } = opts;
      const t = await createTenant(h, { limits: GENEROUS, ...rest });
      const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
      if (credits > 0) await grantCredits(h.deps.db, wsId, credits, `grant:test:${t.workspaceId}`);
      return { ...t, wsId };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await worker.close();
      await orchestrator.close();
      await h.close();
      await Promise.all([dns.close(), rdap.close()]);
    },
  };
}
