// Credit gauges read from the ledger's balances at scrape time, never on the hot path: the sums
// over every workspace of what is reserved and not yet settled, and of what was ever captured.
// Served by the orchestrator (one query per scrape); with several orchestrators, every instance
// reports the same totals, so dashboards take max(), not sum().
import client from 'prom-client';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';

async function totals(db: Db): Promise<{ reserved: number; captured: number } | null> {
  try {
    const res = await sql<{ reserved: string | number | null; captured: string | number | null }>`
      SELECT SUM(reserved) AS reserved, SUM(captured) AS captured FROM credit_accounts`.execute(db);
    const row = res.rows[0];
    return { reserved: Number(row?.reserved ?? 0), captured: Number(row?.captured ?? 0) };
  } catch {
    return null; // MySQL unreachable: keep the last values rather than fail the whole scrape
  }
}

export function registerCreditMetrics(registry: client.Registry, db: Db): void {
  let last: Promise<{ reserved: number; captured: number } | null> | null = null;
  // Both metrics are collected in the same scrape: one query serves both.
  const read = () => (last ??= totals(db).finally(() => setTimeout(() => (last = null), 0)));
  new client.Gauge({
    name: 'lss_credits_reserved_open',
    help: 'Credits reserved by accepted jobs and not yet captured or released (all workspaces)',
    registers: [registry],
    async collect() {
      const t = await read();
      if (t) this.set(t.reserved);
    },
  });
  new client.Counter({
    name: 'lss_credits_captured_total',
    help: 'Credits captured for measured work since the ledger began (all workspaces)',
    registers: [registry],
    async collect() {
      const t = await read();
      if (t) {
        this.reset();
        this.inc(t.captured);
      }
    },
  });
}
