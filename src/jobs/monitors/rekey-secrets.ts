// `webhooks rekey` (admin CLI; docs/operations.md "Rotating WEBHOOK_SECRET_KEY"): re-seals every
// live monitor's webhook secrets under the current WEBHOOK_SECRET_KEY, bound to the monitor, so an
// operator can retire the previous key without any customer rotating a secret. It opens what the
// previous key (WEBHOOK_SECRET_KEY_PREVIOUS) sealed, and the secrets sealed before issue 44 without
// a monitor bound (format 1). Safe to run again and beside live traffic: a row already current is
// left alone, and each write is a compare-and-set on the bytes read, so a rotation that lands
// meanwhile wins (its secret is sealed current already).
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected } from '../../db/transaction.ts';
import type { SecretBox } from './webhook-secrets.ts';

export interface RekeyReport {
  /** Live monitors with a secret, looked at. */
  monitors: number;
  /** Secrets re-sealed (current and previous ones counted apart). */
  resealed: number;
  /** Secrets already sealed under the current key, bound to their monitor. */
  current: number;
  /** Previous secrets whose overlap had ended and that no key opens: cleared (they sign nothing). */
  clearedExpired: number;
  /** Monitors with a secret that no configured key opens (sealed under a key no longer configured). */
  unreadable: string[];
  /** Rows changed between the read and the write (a rotation): run again to be sure. */
  changedMeanwhile: number;
}

type Column = 'webhook_secret' | 'webhook_prev_secret';

export async function rekeyWebhookSecrets(db: Db, box: SecretBox, batch = 500): Promise<RekeyReport> {
  const report: RekeyReport = {
    monitors: 0,
    resealed: 0,
    current: 0,
    clearedExpired: 0,
    unreadable: [],
    changedMeanwhile: 0,
  };
  let after = 0;
  for (;;) {
    const res = await sql<{
      id: number;
      public_id: string;
      webhook_secret: Buffer | null;
      webhook_prev_secret: Buffer | null;
      prev_live: number | null;
    }>`SELECT id, public_id, webhook_secret, webhook_prev_secret,
        webhook_prev_secret_until > NOW(3) AS prev_live
      FROM monitors
      WHERE id > ${after} AND deleted_at IS NULL AND (webhook_secret IS NOT NULL OR webhook_prev_secret IS NOT NULL)
      ORDER BY id LIMIT ${batch}`.execute(db);
    for (const row of res.rows) {
      report.monitors++;
      let unreadable = false;
      for (const column of ['webhook_secret', 'webhook_prev_secret'] as const) {
        const sealed = row[column];
        if (!sealed) continue;
        const opened = box.inspect(sealed, row.public_id);
        if (opened?.current) {
          report.current++;
          continue;
        }
        if (!opened) {
          if (column === 'webhook_prev_secret' && Number(row.prev_live ?? 0) !== 1) {
            if (await swap(db, Number(row.id), column, sealed, null)) report.clearedExpired++;
            else report.changedMeanwhile++;
          } else unreadable = true;
          continue;
        }
        if (await swap(db, Number(row.id), column, sealed, box.seal(opened.secret, row.public_id))) report.resealed++;
        else report.changedMeanwhile++;
      }
      if (unreadable) report.unreadable.push(row.public_id);
    }
    if (res.rows.length < batch) return report;
    after = Number(res.rows.at(-1)!.id);
  }
}

async function swap(db: Db, id: number, column: Column, old: Buffer, next: Buffer | null): Promise<boolean> {
  const res = await sql`UPDATE monitors SET ${sql.ref(column)} = ${next}
    WHERE id = ${id} AND ${sql.ref(column)} = ${old}`.execute(db);
  return affected(res) === 1;
}
