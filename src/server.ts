// The `web` role: a node:cluster primary that forks WEB_CONCURRENCY Express workers, serves the
// aggregated Prometheus metrics privately, and drains on SIGTERM. A worker that dies after it was
// listening is replaced; one that fails before (the port is taken, a port below 1024 without the
// privilege, its dependencies) would fail the same way forever, so the role ends instead: one
// line on stderr saying what and which setting fixes it (src/http/startup-failure.ts), exit 1.
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import { loadConfigOrExit, type Config } from './config/config.ts';
import { connectionShare } from './config/connection-budget.ts';
import { createLogger } from './log.ts';
import {
  isStartupFailure,
  listenFailureLine,
  startupFailureLine,
  type StartupFailure,
} from './http/startup-failure.ts';
import { registry } from './metrics.ts';
import { startReclaimer } from './memory-reclaim.ts';
import { observeBreakers } from './resilience/breaker-observer.ts';

const config = loadConfigOrExit();
const log = createLogger(config.LOG_LEVEL, { role: 'web' });

if (cluster.isPrimary) await runPrimary(config);
else await runWorker(config);

async function runPrimary(cfg: Config): Promise<void> {
  let stopping = false;
  const listening = new Set<number>();
  /** Ends the role on a start-up failure: the line once, every worker stopped, exit 1 (or 78). */
  const fail = (line: string, code = 1) => {
    if (stopping) return;
    stopping = true;
    // However this process ends from here, it ends with 1. A worker leaves cluster.workers on the
    // later of its 'exit' and its 'disconnect', so the last 'exit' may still see it listed; with
    // the metrics port failed, nothing else holds the loop and the process would end by itself
    // with 0 (seen once in the suite: a start-up failure reported as a clean exit).
    process.exitCode = code;
    process.stderr.write(`${line}\n`);
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    const exit = () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(code);
    };
    cluster.on('exit', exit);
    cluster.on('disconnect', exit);
    setTimeout(() => process.exit(code), 3000).unref();
    exit();
  };
  const fork = () => cluster.fork();
  for (let i = 0; i < cfg.WEB_CONCURRENCY; i++) fork();
  cluster.on('listening', (worker) => listening.add(worker.id));
  cluster.on('message', (_worker, msg) => {
    if (isStartupFailure(msg)) fail(msg.line, msg.exitCode);
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    if (!listening.has(worker.id)) {
      // Its own message (sent before it exited) may still be on the way: it names the cause.
      setTimeout(
        () =>
          fail(
            `web role cannot start: a worker exited (${signal ?? `code ${code}`}) before it was listening; its log above says why.`,
          ),
        200,
      ).unref();
      return;
    }
    listening.delete(worker.id);
    log.error({ workerPid: worker.process.pid, code, signal }, 'web worker died; replacing it');
    setTimeout(fork, 500);
  });

  const aggregator = new client.AggregatorRegistry();
  const metricsPort = cfg.METRICS_PORT ?? 9091;
  const metricsServer = http.createServer(async (req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await aggregator.clusterMetrics();
      res.writeHead(200, { 'Content-Type': aggregator.contentType }).end(body);
    } catch (err) {
      log.warn({ err }, 'metrics aggregation failed');
      res.writeHead(503).end();
    }
  });
  metricsServer.on('error', (err) => fail(listenFailureLine(err, 'METRICS_PORT', metricsPort)));
  if (metricsPort > 0) metricsServer.listen(metricsPort, () => log.info({ port: metricsPort }, 'metrics listening'));

  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'draining web workers');
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    const force = setTimeout(() => {
      log.warn('workers did not drain in time; exiting');
      process.exit(1);
    }, cfg.SHUTDOWN_TIMEOUT_MS + 2000);
    force.unref();
    const check = () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        metricsServer.close();
        process.exit(0);
      }
    };
    // Both events: a worker leaves cluster.workers on the later of the two (see fail above).
    cluster.on('exit', check);
    cluster.on('disconnect', check);
    check();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

async function runWorker(cfg: Config): Promise<void> {
  // prom-client answers the primary's aggregation requests only in processes that created an
  // AggregatorRegistry, and only for the registries it was given: ours, not the global default.
  client.AggregatorRegistry.setRegistries([registry]);
  new client.AggregatorRegistry();
  // Before createDeps: the breakers it builds (resolver, RDAP, IP context, MySQL, Redis, lanes)
  // report from their first move.
  observeBreakers({ registry, log });
  // The connection budget against the server's limit, once for the role: by its first worker
  // (the primary holds no MySQL client), beside the imports and dependencies so that the start
  // takes no longer for it (src/db/connection-budget-check.ts).
  const budgetRefusal: Promise<string | null> =
    cluster.worker?.id === 1
      ? import('./db/connection-budget-check.ts')
          .then((m) => m.startupConnectionCheck(cfg, 'web', connectionShare(cfg, 'web'), log))
          .catch(() => null)
      : Promise.resolve(null);
  // Imported here, not at the top: the primary only forks and aggregates metrics, and would
  // otherwise carry the whole app (products, MySQL, Redis, Express) for nothing (~55 MB).
  const { createDeps } = await import('./bootstrap.ts');
  const { createApp } = await import('./app.ts');
  const { createHttpServer } = await import('./http/server.ts');
  let deps: Awaited<ReturnType<typeof createDeps>>;
  try {
    deps = await createDeps(cfg, log);
  } catch (err) {
    return startupFailed(startupFailureLine(err));
  }
  const refusal = await budgetRefusal;
  if (refusal) {
    await deps.close().catch(() => {});
    return startupFailed(refusal, 78);
  }
  let draining = false;
  let listening = false;
  const app = createApp(deps, { isDraining: () => draining });
  const server = createHttpServer(app, log);
  server.on('error', (err) => {
    if (!listening) startupFailed(listenFailureLine(err, 'PORT', cfg.PORT));
    else log.error({ err }, 'web server error');
  });
  server.listen(cfg.PORT, () => {
    listening = true;
    log.info({ port: (server.address() as AddressInfo).port }, 'web worker listening');
  });
  // The heap pages a burst leaves behind (src/memory-reclaim.ts; needs the Procfile's --expose-gc).
  const reclaimer = startReclaimer(log);
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      draining = true;
      const force = setTimeout(() => server.closeAllConnections(), cfg.SHUTDOWN_TIMEOUT_MS);
      force.unref();
      // Stop accepting, let in-flight requests finish, close idle keep-alive sockets.
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      clearTimeout(force);
      reclaimer.stop();
      await deps.close();
      process.exit(0);
    })();
    return closing;
  };
  process.on('SIGTERM', close);
  process.on('SIGINT', close);
}

/** Tells the primary why this worker cannot start (it prints the line once), then exits. */
function startupFailed(line: string, exitCode = 1): void {
  const msg: StartupFailure = { type: 'lss:startup-failed', line, exitCode };
  if (process.send) process.send(msg, () => process.exit(exitCode));
  else {
    process.stderr.write(`${line}\n`);
    process.exit(exitCode);
  }
}
