// Prometheus metrics with conventional names. Each process owns a registry; the web cluster's
// primary aggregates its workers (AggregatorRegistry) and serves them on METRICS_PORT.
import client from 'prom-client';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

export const httpRequestDuration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration by route template, method and status code',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const admissionOutcomes = new client.Counter({
  name: 'lss_admission_outcomes_total',
  help: 'Admission decisions on /v2 routes by outcome code (ok, replayed or an error code)',
  labelNames: ['code'] as const,
  registers: [registry],
});

export const rateLimitDecisions = new client.Counter({
  name: 'lss_rate_limit_decisions_total',
  help: 'Rate limiter decisions by scope (application|product) and decision (allowed|refused|error)',
  labelNames: ['scope', 'decision'] as const,
  registers: [registry],
});

export const idempotencyEvents = new client.Counter({
  name: 'lss_idempotency_events_total',
  help: 'Idempotency outcomes: claimed, replayed, conflict, in_progress, released, recovered',
  labelNames: ['event'] as const,
  registers: [registry],
});

export const productExecutions = new client.Counter({
  name: 'lss_product_executions_total',
  help: 'Inline product executions by product and envelope status',
  labelNames: ['product', 'status'] as const,
  registers: [registry],
});

export const laneOutcomes = new client.Counter({
  name: 'lss_lane_outcomes_total',
  help: 'Lane outcomes of inline products by product, lane and status',
  labelNames: ['product', 'lane', 'status'] as const,
  registers: [registry],
});

export const creditsReserved = new client.Counter({
  name: 'lss_credits_reserved_total',
  help: 'Credits reserved at acceptance of a paid job, by product (counted after the commit)',
  labelNames: ['product'] as const,
  registers: [registry],
});

// Change detection (CONTRACT §13): each comparison of a job with its baseline, observed once, when
// the terminal transaction finishes it. Not on the web's registry: the orchestrator compares, and
// registers these on its own (registerChangeMetrics).
export const changeComparisonSeconds = new client.Histogram({
  name: 'lss_change_comparison_seconds',
  help: "Time a job's comparison with its baseline took, every chunk of it (resumed or redone ones included)",
  buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 120],
  registers: [],
});

export const changeComparisonObjects = new client.Histogram({
  name: 'lss_change_comparison_objects',
  help: 'Objects compared per comparison (identities of either job, each once)',
  buckets: [10, 100, 1000, 5000, 20_000, 50_000, 100_000],
  registers: [],
});

/** The change comparison's metrics on a process's registry (once per registry). */
export function registerChangeMetrics(r: client.Registry): void {
  for (const m of [changeComparisonSeconds, changeComparisonObjects])
    if (!r.getSingleMetric((m as unknown as { name: string }).name)) r.registerMetric(m);
}
