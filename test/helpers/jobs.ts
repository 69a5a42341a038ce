// Shared by the async-product tests: a workspace with credits and generous limits, and polling a
// job until it is terminal.
import { expect } from 'vitest';
import { grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/db/tenancy-repo.ts';
import type { RateOverrides } from '../../src/ratelimit/policies.ts';
import { client, createTenant, type Harness, type Tenant } from './harness.ts';

/** A tenant whose limits never refuse, granted `credits`; wsId is its internal workspace id. */
export async function fundedTenant(h: Harness, credits: number, limits: RateOverrides): Promise<Tenant & { wsId: number }> {
  const t = await createTenant(h, { limits });
  const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
  if (credits > 0) await grantCredits(h.deps.db, wsId, credits, `grant:test:${t.workspaceId}`);
  return { ...t, wsId };
}

/** GET /v2/jobs/{ref} every 100 ms until terminal (throws after timeoutMs). */
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
