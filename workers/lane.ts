// Entry point of the lane roles: `node workers/lane.ts <dns|mail|web|domain|active>`.
import client from 'prom-client';
import { loadConfigOrExit } from '../src/config/config.ts';
import { createLogger } from '../src/log.ts';
import { LANES, isLaneName } from '../src/queue/streams.ts';
import { observeBreakers } from '../src/resilience/breaker-observer.ts';
import { installShutdown } from './process-lifecycle.ts';
import { serveMetrics } from './metrics-server.ts';
import { laneConnectionLimit, startLaneWorker } from './start-lane-worker.ts';
import { startupConnectionCheck } from '../src/db/connection-budget-check.ts';
import { laneDefaults, parseQueueSettings } from '../src/queue/queue-settings.ts';

const lane = process.argv[2] ?? '';
if (!isLaneName(lane)) {
  process.stderr.write(`usage: node workers/lane.ts <${LANES.join('|')}>\n`);
  process.exit(64); // EX_USAGE
}
const config = loadConfigOrExit();
const log = createLogger(config.LOG_LEVEL, { role: `lane-${lane}` });
const pool = laneConnectionLimit(config, lane, parseQueueSettings(process.env, laneDefaults(lane)));
const refusal = await startupConnectionCheck(config, `lane-${lane}`, pool, log);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(78); // EX_CONFIG
}
const metrics = new client.Registry();
// Before the worker starts: its resolver's and RDAP client's breakers report from their first move.
observeBreakers({ registry: metrics, log });
const worker = await startLaneWorker(lane, { config, log, metrics });
let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
if (config.METRICS_PORT) {
  client.collectDefaultMetrics({ register: metrics });
  // CPU time of the lane's main thread alone (process_cpu_seconds_total also counts the parse
  // pool's threads): what a lane's work costs its event loop, as a figure the machine's load does
  // not inflate the way it inflates the event-loop lag (test/bench/web-lookups.ts divides it by
  // the lookups of a burst).
  let counted = 0;
  new client.Counter({
    name: 'lss_main_thread_cpu_seconds_total',
    help: 'CPU time (user + system) of the main thread of this lane process',
    registers: [metrics],
    collect() {
      const u = process.threadCpuUsage();
      const now = (u.user + u.system) / 1e6;
      this.inc(Math.max(0, now - counted));
      counted = now;
    },
  });
  metricsServer = await serveMetrics(metrics, config.METRICS_PORT);
}
installShutdown(log, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await worker.close();
  await metricsServer?.close();
});
