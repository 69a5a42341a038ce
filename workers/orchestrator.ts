// Entry point of the orchestrator role: `node workers/orchestrator.ts`.
import client from 'prom-client';
import { loadConfigOrExit } from '../src/config/config.ts';
import { createLogger } from '../src/log.ts';
import { startOrchestrator } from '../src/jobs/orchestration/orchestrator.ts';
import { connectionShare } from '../src/config/connection-budget.ts';
import { startupConnectionCheck } from '../src/db/connection-budget-check.ts';
import { checkTimeoutMs } from './lane-runner/registry.ts';
import { installShutdown } from './process-lifecycle.ts';
import { serveMetrics } from './metrics-server.ts';

const config = loadConfigOrExit();
const log = createLogger(config.LOG_LEVEL, { role: 'orchestrator' });
const refusal = await startupConnectionCheck(config, 'orchestrator', connectionShare(config, 'orchestrator'), log);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(78); // EX_CONFIG
}
const metrics = new client.Registry();
const orchestrator = await startOrchestrator({ config, log, metrics, checkTimeoutMs });
let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
if (config.METRICS_PORT) {
  client.collectDefaultMetrics({ register: metrics });
  metricsServer = await serveMetrics(metrics, config.METRICS_PORT);
}
installShutdown(log, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await orchestrator.close();
  await metricsServer?.close();
});
