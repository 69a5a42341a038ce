// The estate's metrics (CONTRACT §15-16), on the orchestrator's registry: it is the role whose
// terminal work applies suppressions and updates the inventory, and whose retention purges it.
// Module-level like the comparison's (src/metrics.ts), registered once per registry.
import client from 'prom-client';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

export const suppressionsApplied = new client.Counter({
  name: 'lss_suppressions_applied_total',
  help: "Findings a suppression covered when their job ended (each job's findings counted once)",
  registers: [],
});

export const inventoryUpdateSeconds = new client.Histogram({
  name: 'lss_estate_terminal_seconds',
  help: "Time a job's terminal transaction spent on suppressions and the inventory's marker",
  buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30],
  registers: [],
});

export const inventoryDrainSeconds = new client.Histogram({
  name: 'lss_inventory_write_seconds',
  help: "Time the inventory of one job's end took to write, after its terminal transaction (all its pages)",
  buckets: [0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 120],
  registers: [],
});

/** Rows counted at most once a minute: a scrape every 15 s must not walk a million-row index each time. */
const COUNT_EVERY_MS = 60_000;

export function registerEstateMetrics(r: client.Registry, db: Db): void {
  for (const m of [suppressionsApplied, inventoryUpdateSeconds, inventoryDrainSeconds])
    if (!r.getSingleMetric((m as unknown as { name: string }).name)) r.registerMetric(m);
  if (r.getSingleMetric('lss_inventory_rows')) return;
  let counted: { at: number; rows: Array<{ state: string; n: number }> } | null = null;
  new client.Gauge({
    name: 'lss_inventory_rows',
    help: 'Inventory rows (CONTRACT §16) of every workspace, by state (counted at most once a minute)',
    labelNames: ['state'] as const,
    registers: [r],
    async collect() {
      if (!counted || Date.now() - counted.at > COUNT_EVERY_MS) {
        const res = await sql<{ state: string; n: number }>`
          SELECT state, COUNT(*) AS n FROM inventory GROUP BY state`.execute(db);
        counted = { at: Date.now(), rows: res.rows };
      }
      this.reset();
      for (const s of ['present', 'gone', 'unconfirmed']) this.set({ state: s }, 0);
      for (const row of counted.rows) this.set({ state: String(row.state) }, Number(row.n));
    },
  });
}
