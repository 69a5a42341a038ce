// The estate's part of a job's terminal transaction (CONTRACT §15-16): the one call finalize-job.ts
// makes there, right after the comparison's counts are stored and before the monitor's event reads
// them. Suppressions (they split the counts and decide what is open), then the inventory's durable
// marker: the inventory itself is written after the commit (./inventory-pending.ts), so the
// terminal transaction's work and memory do not grow with the job's objects.
import type { Logger } from 'pino';
import type { Trx } from '../../db/transaction.ts';
import { applySuppressions } from '../suppressions/apply-suppressions.ts';
import { inventoryUpdateSeconds, suppressionsApplied } from './estate-metrics.ts';
import { queueInventory } from './inventory-pending.ts';
import type { InventoryJob } from './update-inventory.ts';
import { readEstateJobState } from './estate-job.ts';

export async function recordEstate(trx: Trx, job: InventoryJob, log?: Logger): Promise<void> {
  const began = performance.now();
  const state = await readEstateJobState(trx, job.id);
  if (!state) return;
  const sup = await applySuppressions(trx, job, state);
  await queueInventory(trx, job);
  // Counted once the transaction is sure to commit? A retried terminal transaction (a deadlock)
  // counts again: the counter is an operator's rate, not a ledger.
  suppressionsApplied.inc(sup.applied);
  const ms = performance.now() - began;
  inventoryUpdateSeconds.observe(ms / 1000);
  log?.debug({ jobId: job.id, suppressed: sup.applied, durationMs: Math.round(ms) }, 'estate recorded');
}
