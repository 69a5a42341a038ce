// Async-product test helpers: a funded tenant and polling a job until it is terminal.
import { expect } from 'vitest';
import { grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { client, createTenant, type Harness, type Tenant } from './harness.ts';

export async function fundedTenant(
  h: Harness,
  credits: number,
  opts: Parameters<typeof createTenant>[1] = {},
): Promise<Tenant & { wsId: number }> {
  const t = await createTenant(h, opts);
  const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
  if (credits > 0) await grantCredits(h.deps.db, wsId, credits, `grant:test:${t.workspaceId}`);
  return { ...t, wsId };
}

export async function pollTerminal(h: Harness, key: string, jobRef: string, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await client(h.app, key).get(`/v2/jobs/${jobRef}`);
    expect(res.status).toBe(200);
    if (res.body.terminal) return res;
    if (Date.now() > until) throw new Error(`job ${jobRef} not terminal: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
