// The operator's view of monitors and webhooks (docs/operations.md, "Monitors and webhooks"),
// registered on the orchestrator's registry: it is the role that schedules and delivers.
import client from 'prom-client';

export interface MonitorMetrics {
  /** Decided runs: started (a job) or skipped (a refusal, or previous_run_active); deferred: a retryable refusal, tried again. */
  runs: client.Counter<'outcome'>;
  /** Delivery attempts by what came of them. */
  deliveries: client.Counter<'status'>;
  /** From an attempt's due time to its start: how far the delivery workers lag behind. */
  lag: client.Histogram;
}

export function monitorMetrics(registry: client.Registry): MonitorMetrics {
  return {
    runs: new client.Counter({
      name: 'lss_monitor_runs_total',
      help: 'Monitor runs decided, by outcome (started: a job; skipped: refused or previous_run_active; deferred: a retryable refusal, tried again within the interval)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    deliveries: new client.Counter({
      name: 'lss_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by status (delivered, retrying, failed: gave up, gone: a 410 disabled the webhook)',
      labelNames: ['status'],
      registers: [registry],
    }),
    lag: new client.Histogram({
      name: 'lss_webhook_delivery_lag_seconds',
      help: "Seconds from a delivery attempt's due time to its start",
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
  };
}
