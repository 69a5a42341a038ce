// The operator's view of the circuit breakers (breaker.ts): a log line when a dependency's
// breaker opens and when it closes again (with how long it was down), and metrics —
// `lss_breaker_open{breaker}` (1 while refused) and `lss_breaker_opened_total{breaker}`. Without
// it a 503 said "resolver down" but nothing said when the breaker opened or came back.
//
// The open ↔ half_open flips of each probe while down are neither logged nor counted: at one
// probe a second they would drown the two lines that matter.
import type client from 'prom-client';
import { Counter, Gauge } from 'prom-client';
import { onBreakerTransition } from './breaker.ts';

/** The part of a pino logger used here (the vocabulary layer does not import our logger). */
export interface TransitionLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** Observes every breaker of this process until the returned function is called. */
export function observeBreakers(opts: { registry?: client.Registry; log: TransitionLog }): () => void {
  const registers = opts.registry ? [opts.registry] : [];
  const open = opts.registry
    ? ((opts.registry.getSingleMetric('lss_breaker_open') as Gauge<'breaker'> | undefined) ??
      new Gauge({
        name: 'lss_breaker_open',
        help: 'Circuit breaker of a dependency: 1 while it refuses (open or probing), 0 when closed',
        labelNames: ['breaker'] as const,
        // The web primary sums its workers' registries; "any worker refusing" is the useful view.
        aggregator: 'max',
        registers,
      }))
    : undefined;
  const opened = opts.registry
    ? ((opts.registry.getSingleMetric('lss_breaker_opened_total') as Counter<'breaker'> | undefined) ??
      new Counter({
        name: 'lss_breaker_opened_total',
        help: 'Times a dependency circuit breaker opened (consecutive failures reached its threshold)',
        labelNames: ['breaker'] as const,
        registers,
      }))
    : undefined;
  return onBreakerTransition((t) => {
    if (t.from === 'closed') {
      open?.set({ breaker: t.name }, 1);
      opened?.inc({ breaker: t.name });
      opts.log.warn({ breaker: t.name }, 'dependency breaker opened: refusing until a probe or a request succeeds');
    } else if (t.to === 'closed') {
      open?.set({ breaker: t.name }, 0);
      opts.log.info({ breaker: t.name, downMs: t.downMs }, 'dependency breaker closed: the dependency answers again');
    }
  });
}
