// The release role's sweep of approved scopes that approve nothing under the public suffix list
// (`co.uk`, `github.io`, or a suffix the list gained since the row was approved): migration 011
// removed what SQL can judge (single labels, numeric, non-LDH, special-use), this applies the rest
// of the one rule (approvesNames). Every reader skips such a row anyway; removing it keeps `scope
// list` and `workspace show` honest. Run after the migrations, at every release.
import type { Db } from '../db/database.ts';
import { approvesNames } from './approved-scopes.ts';

export async function pruneUnapprovableScopes(db: Db): Promise<Array<{ workspaceId: number; suffix: string }>> {
  const rows = await db.selectFrom('workspace_target_scopes').select(['workspace_id', 'suffix']).execute();
  const refused = rows.filter((r) => !approvesNames(r.suffix));
  for (const r of refused) {
    await db
      .deleteFrom('workspace_target_scopes')
      .where('workspace_id', '=', r.workspace_id)
      .where('suffix', '=', r.suffix)
      .execute();
    await db
      .deleteFrom('scope_challenges')
      .where('workspace_id', '=', r.workspace_id)
      .where('suffix', '=', r.suffix)
      .execute();
  }
  return refused.map((r) => ({ workspaceId: Number(r.workspace_id), suffix: r.suffix }));
}
