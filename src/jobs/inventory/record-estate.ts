// The estate's part of a job's terminal work (CONTRACT §15-16): the one call finalize-job.ts makes
// in the terminal transaction, right after the comparison's counts are stored and before the
// monitor's event reads them. Suppressions first (they split the counts and decide what is open),
// then the inventory from the comparison and the open findings.
import type { Logger } from 'pino';
import type { Trx } from '../../db/transaction.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
import { applySuppressions } from '../suppressions/apply-suppressions.ts';
import { inventoryUpdateSeconds, suppressionsApplied } from './estate-metrics.ts';
import { updateInventory, type InventoryJob } from './update-inventory.ts';
import { readEstateJobState } from './estate-job.ts';

export async function recordEstate(
  trx: Trx,
  job: InventoryJob,
  rules: ChangeRules | undefined,
  log?: Logger,
): Promise<void> {
  const began = performance.now();
  const state = await readEstateJobState(trx, job.id);
  if (!state) return;
  const sup = await applySuppressions(trx, job, state);
  const inv = await updateInventory(trx, job, rules, state);
  // Counted once the transaction is sure to commit? A retried terminal transaction (a deadlock)
  // counts again: the counter is an operator's rate, not a ledger.
  suppressionsApplied.inc(sup.applied);
  const ms = performance.now() - began;
  inventoryUpdateSeconds.observe(ms / 1000);
  log?.debug({ jobId: job.id, suppressed: sup.applied, ...inv, durationMs: Math.round(ms) }, 'estate recorded');
}
