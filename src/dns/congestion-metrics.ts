// The operator's view of the stub resolver's congestion windows (./congestion.ts): what limits the
// questions of this process now, and what was given back unasked. Summed over the process's
// resolvers (one in a lane or web process). Zones are not labels (a scan touches thousands): the
// zones tracked, those whose window is below its cap, and the smallest window of a zone in use say
// whether a zone is being slowed down; the servers' windows are labelled by index in DNS_SERVERS.
import client from 'prom-client';
import { liveCongestion, type CongestionStats } from './congestion.ts';

function stats(): CongestionStats[] {
  return [...liveCongestion()].map((c) => c.stats());
}

/** Registers the DNS congestion metrics on `registry` (once per registry). */
export function registerDnsCongestionMetrics(registry: client.Registry): void {
  if (registry.getSingleMetric('lss_dns_questions_waiting')) return;
  const sum = (f: (s: CongestionStats) => number) => stats().reduce((n, s) => n + f(s), 0);
  new client.Gauge({
    name: 'lss_dns_questions_waiting',
    help: 'DNS questions waiting in this process behind a full congestion window (zone or server)',
    registers: [registry],
    collect() {
      this.set(sum((s) => s.waiting));
    },
  });
  new client.Gauge({
    name: 'lss_dns_questions_in_flight',
    help: 'DNS questions sent and not yet answered or timed out',
    registers: [registry],
    collect() {
      this.set(sum((s) => s.inFlight));
    },
  });
  new client.Gauge({
    name: 'lss_dns_server_window',
    help: 'Congestion window of each DNS_SERVERS server: questions it may have in flight (by index)',
    labelNames: ['server'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of stats()) for (const [i, w] of s.serverWindows.entries()) this.set({ server: String(i) }, w);
    },
  });
  new client.Gauge({
    name: 'lss_dns_zones_limited',
    help: 'Zones whose congestion window is below its cap (DNS_ZONE_WINDOW_MAX): zones being slowed down',
    registers: [registry],
    collect() {
      this.set(sum((s) => s.zonesLimited));
    },
  });
  new client.Gauge({
    name: 'lss_dns_zone_window_smallest',
    help: 'The smallest congestion window of a zone with questions in flight or waiting (the cap when none)',
    registers: [registry],
    collect() {
      const all = stats();
      if (all.length > 0) this.set(Math.min(...all.map((s) => s.smallestZoneWindow)));
    },
  });
  let givenBack = 0;
  new client.Counter({
    name: 'lss_dns_questions_not_sent_total',
    help: 'DNS questions given back unasked after waiting DNS_QUEUE_WAIT_MS behind a full window (a local outcome)',
    registers: [registry],
    collect() {
      const now = sum((s) => s.givenBack);
      this.inc(Math.max(0, now - givenBack));
      givenBack = now;
    },
  });
  const cutsSeen = { zone: 0, server: 0 };
  new client.Counter({
    name: 'lss_dns_window_cuts_total',
    help: 'Times a congestion window was halved (timeouts, drops, SERVFAIL), by kind (zone, server)',
    labelNames: ['kind'] as const,
    registers: [registry],
    collect() {
      for (const kind of ['zone', 'server'] as const) {
        const now = sum((s) => s.cuts[kind]);
        this.inc({ kind }, Math.max(0, now - cutsSeen[kind]));
        cutsSeen[kind] = now;
      }
    },
  });
}
