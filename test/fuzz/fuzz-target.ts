// A real service to fuzz: createDeps over the given configuration (real MySQL and Redis), the
// app behind the web role's own server factory, every log line captured; tenants and keys of
// every kind the admission chain tells apart; a few real jobs (and another workspace's) so job
// routes are hit with refs that exist. No lane worker or orchestrator runs: async products answer
// their documented 503 at the readiness step, which is what the fuzzer may see of them.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type net from 'node:net';
import { pino } from 'pino';
import type { Config } from '../../src/config/config.ts';
import { createDeps } from '../../src/bootstrap.ts';
import { createApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { buildOpenApi } from '../../src/routes/openapi/openapi.ts';
import { products } from '../../src/products/registry.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { createKey, createWorkspace, revokeKey, setLimits, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { specialUseOf, specialUsePolicy } from '../../src/net/special-use.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { acceptJob } from '../../src/jobs/jobs-repo.ts';
import type { FuzzTarget } from './fuzz-http.ts';

export interface RunningTarget {
  target: FuzzTarget;
  /** Every secret the logs must never contain. */
  secrets: string[];
  logLines: string[];
  close(): Promise<void>;
}

const RAISED = { app: { perMinute: 1_000_000, burst: 100_000 } };

export async function startFuzzTarget(config: Config): Promise<RunningTarget> {
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  });
  // The service's own logger settings (redaction included), writing to the capture.
  const log = pino(
    {
      level: 'info',
      redact: {
        paths: [
          'authorization',
          'headers.authorization',
          'req.headers.authorization',
          '*.authorization',
          'key',
          'apiKey',
        ],
        censor: '[redacted]',
      },
    },
    sink,
  );
  const deps = await createDeps(config, log);
  const db = deps.db;
  const ws = await createWorkspace(db, {
    name: `fuzz-${randomBytes(3).toString('hex')}`,
    acceptResponsibleUse: config.RESPONSIBLE_USE_VERSION,
    // Scopes are checked as the admin CLI checks them: `lab.test` is approvable only where the run
    // allows the lab's special-use TLD (npm run fuzz against the lab); elsewhere its names are
    // refused as input before any gate, and there is nothing to approve.
    approveScopes: specialUseOf('lab.test', specialUsePolicy(config)) === null ? ['lab.test'] : [],
    scopePolicy: specialUsePolicy(config),
  });
  await setLimits(db, ws.workspaceId, undefined, {
    ...RAISED,
    products: Object.fromEntries(products.map((p) => [p.id, { perMinute: 1_000_000, perHour: 10_000_000 }])),
  });
  const wsId = await workspaceInternalId(db, ws.workspaceId);
  await grantCredits(db, wsId, 1_000_000, `grant:fuzz:${ws.workspaceId}`);
  const full = await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId });
  const readOnly = await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId, scopes: ['scan:read'] });
  const noFindingScope = await createKey(db, config.KEY_PEPPER, {
    workspace: ws.workspaceId,
    scopes: ['scan:read', 'scan:create'],
  });
  const revoked = await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId });
  await revokeKey(db, revoked.keyId);
  const other = await createWorkspace(db, { name: `fuzz-other-${randomBytes(3).toString('hex')}` });
  const otherKey = await createKey(db, config.KEY_PEPPER, { workspace: other.workspaceId });

  const auth = new Authenticator(db, config.KEY_PEPPER, 0);
  const principal = (await auth.verify(full.key))!;
  const otherPrincipal = (await auth.verify(otherKey.key))!;
  const job = async (p: typeof principal) =>
    (
      await acceptJob(db, {
        principal: p,
        product: 'lookup.domain.v1',
        target: { type: 'domain_name', value: 'lab.test' },
        profile: null,
        input: { value: 'lab.test' },
        price: 0,
        deadlineMs: 3_600_000,
        requestId: `req_fuzz${randomBytes(6).toString('hex')}`,
        claim: undefined,
      })
    ).jobRef;
  const jobRefs = [await job(principal), await job(principal)];
  const foreignJobRefs = [await job(otherPrincipal)];

  const server = createHttpServer(createApp(deps), log, { requestTimeoutMs: 5000, headersTimeoutMs: 5000 });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    target: {
      port,
      keys: {
        full: full.key,
        readOnly: readOnly.key,
        noFindingScope: noFindingScope.key,
        revoked: revoked.key,
        other: otherKey.key,
      },
      jobRefs,
      foreignJobRefs,
      objectIds: [],
      openapi: buildOpenApi(products) as Record<string, any>,
    },
    secrets: [
      full.key,
      readOnly.key,
      noFindingScope.key,
      revoked.key,
      otherKey.key,
      config.KEY_PEPPER,
      config.CURSOR_SECRET,
    ],
    logLines,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await deps.close();
    },
  };
}
