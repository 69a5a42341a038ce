// The operator's view of the congestion windows per target address (./address-slots.ts): what
// holds this process's connections back now, and what was given up or attempted again. Addresses
// are not labels (a scan touches thousands): the addresses tracked, those whose window is below
// its cap (OUTBOUND_CONNECTIONS_PER_ADDRESS) and the smallest window of an address in use say
// whether a target is being slowed down. Read at scrape time from the process's one set of slots,
// never on a connection's path.
import client from 'prom-client';
import type { AddressSlots, AddressSlotsStats } from './address-slots.ts';

/** Registers the outbound congestion metrics of `slots` on `registry` (once per registry). */
export function registerAddressSlotsMetrics(registry: client.Registry, slots: AddressSlots | null | undefined): void {
  if (!slots || registry.getSingleMetric('lss_outbound_connections_waiting')) return;
  // One walk of the addresses per scrape, whichever metric asks first.
  let snapshot: { at: number; stats: AddressSlotsStats } | null = null;
  const stats = (): AddressSlotsStats => {
    const now = performance.now();
    if (!snapshot || now - snapshot.at > 1000) snapshot = { at: now, stats: slots.stats() };
    return snapshot.stats;
  };
  new client.Gauge({
    name: 'lss_outbound_connections_waiting',
    help: "Connections waiting in this process for a place in their target address's congestion window",
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
  new client.Gauge({
    name: 'lss_outbound_connections_open',
    help: 'Connections open (or paced) to target addresses through the outbound guard',
    registers: [registry],
    collect() {
      this.set(stats().open);
    },
  });
  new client.Gauge({
    name: 'lss_outbound_addresses_limited',
    help: 'Target addresses whose congestion window is below its cap (OUTBOUND_CONNECTIONS_PER_ADDRESS): addresses being slowed down',
    registers: [registry],
    collect() {
      this.set(stats().limited);
    },
  });
  new client.Gauge({
    name: 'lss_outbound_address_window_smallest',
    help: 'The smallest congestion window of a target address with connections open or waiting (the cap when none)',
    registers: [registry],
    collect() {
      this.set(stats().smallestWindow);
    },
  });
  const seen = { expired: 0, retried: 0, drop: 0, throttle: 0 };
  const delta = (key: keyof typeof seen, now: number) => {
    const d = Math.max(0, now - seen[key]);
    seen[key] = now;
    return d;
  };
  new client.Counter({
    name: 'lss_outbound_local_waits_expired_total',
    help: 'Connections given up unattempted after waiting OUTBOUND_QUEUE_WAIT_MS for a place (congested: a local outcome, the task is given back)',
    registers: [registry],
    collect() {
      this.inc(delta('expired', stats().expired));
    },
  });
  new client.Counter({
    name: 'lss_outbound_connections_retried_total',
    help: 'Connections attempted again after a drop by an address that answers others (rate limiting)',
    registers: [registry],
    collect() {
      this.inc(delta('retried', stats().retried));
    },
  });
  new client.Counter({
    name: 'lss_outbound_window_cuts_total',
    help: "Times a target address's congestion window was halved, by why (drop: connections dropped by an address that answers others; throttle: a run of 429/503)",
    labelNames: ['why'] as const,
    registers: [registry],
    collect() {
      const { cuts } = stats();
      this.inc({ why: 'drop' }, delta('drop', cuts.drop));
      this.inc({ why: 'throttle' }, delta('throttle', cuts.throttle));
    },
  });
}
