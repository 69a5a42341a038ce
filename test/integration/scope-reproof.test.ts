// Issue 45 item 5: verified scopes are proven again on a schedule (SCOPE_REPROVE_HOURS), at the
// zone's own servers, on the real MariaDB and the lab DNS (the resolver and the zone's server:
// ns.reproof.test is 127.0.0.1, TCP 53 mapped to the lab's port). The clock is moved forward by
// passing `now`:
//   - a re-proof that finds the record gone suspends the scope: admission refuses (even once the
//     record is back), queued active tasks stop (activeAuthorizationGone), `scope list` says so,
//     and only `scope approve --verify` lifts it;
//   - a re-proof that cannot say (the zone's server silent) keeps the grant for one more period,
//     asked again meanwhile, then suspends it;
//   - two orchestrators running at once prove a scope once;
//   - the orchestrator role runs it (a scope last proven a period ago, its record gone, is
//     suspended by a running orchestrator on its own).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { servedApex, type Zone } from '../lab/zones.ts';
import { approveScope, challengeScope, listScopes, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { activeAuthorizationGone } from '../../src/auth/keys-repo.ts';
import { reproveDueScopes } from '../../src/auth/scope-reproof.ts';
import type { ProofDns } from '../../src/auth/scope-proof.ts';
import { specialUsePolicy } from '../../src/net/special-use.ts';
import { startOrchestrator } from '../../src/jobs/orchestration/orchestrator.ts';
import { queueKeys } from '../../src/queue/streams.ts';

const ZONE = 'reproof.test';
const HOUR = 3_600_000;
const zone = (silent: string[] = []): Zone => ({
  origin: ZONE,
  records: servedApex(ZONE),
  // The zone's server drops these TXT questions (the NS walk, asked through the resolver, still answers).
  behaviours: silent.map((name) => ({ name, behaviour: { kind: 'silent' as const }, types: ['TXT'] })),
});

describe('scheduled re-proof of verified scopes (issue 45 item 5)', () => {
  let dns: LabDns;
  let h: Harness;
  let proofDns: ProofDns;

  beforeAll(async () => {
    dns = await startLabDns({ zones: [zone()] });
    h = await startHarness({
      DNS_SERVERS: `[${dns.host}]:${dns.port}`,
      ALLOW_SPECIAL_USE_DOMAINS: 'test',
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
      OUTBOUND_PORT_MAP: `53=${dns.port}`,
      DNS_TIMEOUT_MS: '1000',
      SCOPE_PROOF_CACHE_SECONDS: '0',
    });
    proofDns = { resolver: h.deps.runtime.services.resolver!, servers: h.deps.runtime.services.outbound! };
  });

  afterAll(async () => {
    await h?.close();
    await dns?.close();
  });

  /** An active tenant with `domain` verified now (challenge, publish, approve --verify). */
  async function verified(domain: string) {
    const t = await createTenant(h, { active: true, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION });
    const challenge = await challengeScope(h.deps.db, t.workspaceId, domain, specialUsePolicy(h.config));
    dns.publish(challenge.name, 'TXT', [[challenge.value]]);
    const approved = await approveScope(h.deps.db, t.workspaceId, domain, {
      policy: specialUsePolicy(h.config),
      verifyWith: proofDns,
    });
    expect(approved.proof).toBe('verified');
    return { t, id: await workspaceInternalId(h.deps.db, t.workspaceId), challenge };
  }
  const reprove = (workspaceId: number, afterMs: number) =>
    reproveDueScopes(h.deps.db, proofDns, {
      periodHours: h.config.SCOPE_REPROVE_HOURS,
      now: new Date(Date.now() + afterMs),
      workspaceId,
    });
  const standing = async (workspaceId: string) => (await listScopes(h.deps.db, workspaceId)).scopes[0]!;
  const advanced = (value: string) => ({
    profile: 'advanced',
    target: { type: 'domain_name', value },
    options: { active: true, maxCredits: 100 },
  });

  it('the default period is 24 hours', () => {
    expect(h.config.SCOPE_REPROVE_HOURS).toBe(24);
  });

  it('a re-proof that finds the record gone suspends the scope: admission refuses and queued active work stops', async () => {
    const domain = `gone.${ZONE}`;
    const { t, id, challenge } = await verified(domain);
    const scan = () => client(h.app, t.key).post('/v2/scans', advanced(`www.${domain}`));
    expect((await scan()).body.error.code).toBe('scan_profile_unavailable'); // past the gates

    // Not due within the period: nothing is asked.
    expect(await reprove(id, 23 * HOUR)).toEqual([]);
    dns.withdraw(challenge.name);
    const [r] = await reprove(id, 25 * HOUR);
    expect(r).toMatchObject({ domain, outcome: 'missing', grant: 'suspended' });
    expect(await standing(t.workspaceId)).toMatchObject({
      domain,
      proof: 'verified',
      proofState: 'suspended',
      lastProofOutcome: 'missing',
      suspendedAt: expect.any(Date),
    });
    // The lane's question before each queued active task (issue 45 item 4's rule).
    expect(await activeAuthorizationGone(h.deps.db, id, domain, h.config.RESPONSIBLE_USE_VERSION)).toMatch(/suspended/);

    // Suspended stays suspended when the record is back: the scope approves nothing at admission.
    dns.publish(challenge.name, 'TXT', [[challenge.value]]);
    const refused = await scan();
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('approved_target_scope_required');
    expect(await reprove(id, 50 * HOUR)).toEqual([]); // a suspended scope is not re-proven

    // Only a new proof lifts it.
    await approveScope(h.deps.db, t.workspaceId, domain, { policy: specialUsePolicy(h.config), verifyWith: proofDns });
    expect(await standing(t.workspaceId)).toMatchObject({ proofState: 'proven', suspendedAt: null });
    expect(await activeAuthorizationGone(h.deps.db, id, domain, h.config.RESPONSIBLE_USE_VERSION)).toBeNull();
    expect((await scan()).body.error.code).toBe('scan_profile_unavailable');
  });

  it('a re-proof that finds the record keeps the scope proven and moves the next one a period on', async () => {
    const domain = `kept.${ZONE}`;
    const { t, id } = await verified(domain);
    const [r] = await reprove(id, 25 * HOUR);
    expect(r).toMatchObject({ domain, outcome: 'present', grant: 'kept' });
    const s = await standing(t.workspaceId);
    expect(s).toMatchObject({ proofState: 'proven', lastProofOutcome: 'present', suspendedAt: null });
    expect(s.lastProvenAt!.getTime()).toBeGreaterThan(Date.now() + 24 * HOUR);
    expect(await reprove(id, 40 * HOUR)).toEqual([]);
    expect(await reprove(id, 50 * HOUR)).toMatchObject([{ outcome: 'present' }]);
  });

  it('a re-proof that cannot say keeps the grant one more period, then suspends it', async () => {
    const domain = `dark.${ZONE}`;
    const { t, id } = await verified(domain);
    // From now on the zone's server never answers the challenge (nor its wildcard check).
    dns.setZone(zone([`_lss-challenge.dark`]));
    try {
      const [first] = await reprove(id, 25 * HOUR);
      expect(first).toMatchObject({ outcome: 'indeterminate', grant: 'kept' });
      expect(first!.detail).toContain('[timeout]');
      expect(await standing(t.workspaceId)).toMatchObject({
        proofState: 'unconfirmed',
        lastProofOutcome: 'indeterminate',
        suspendedAt: null,
      });
      expect(await activeAuthorizationGone(h.deps.db, id, domain, h.config.RESPONSIBLE_USE_VERSION)).toBeNull();
      // Asked again within the hour's retry, still unknown: still kept.
      expect(await reprove(id, 25 * HOUR + 30 * 60_000)).toEqual([]);
      expect(await reprove(id, 26 * HOUR + 60_000)).toMatchObject([{ outcome: 'indeterminate', grant: 'kept' }]);
      // A whole period after the re-proof that was due (two since the last proof): suspended.
      const [last] = await reprove(id, 48 * HOUR + 60_000);
      expect(last).toMatchObject({ outcome: 'indeterminate', grant: 'suspended' });
      expect(await standing(t.workspaceId)).toMatchObject({ proofState: 'suspended' });
      expect(await activeAuthorizationGone(h.deps.db, id, domain, h.config.RESPONSIBLE_USE_VERSION)).toMatch(
        /suspended/,
      );
    } finally {
      dns.setZone(zone());
    }
  });

  it('two orchestrators at once prove a scope once (the claim in MySQL)', async () => {
    const { id } = await verified(`twice.${ZONE}`);
    const [a, b] = await Promise.all([reprove(id, 25 * HOUR), reprove(id, 25 * HOUR)]);
    expect(a.length + b.length).toBe(1);
  });

  it('the orchestrator role runs the re-proof on its own', async () => {
    const domain = `sweep.${ZONE}`;
    const { t, challenge } = await verified(domain);
    const id = await workspaceInternalId(h.deps.db, t.workspaceId);
    // Proven a period and a minute ago (the clock cannot be moved inside a running orchestrator).
    const aPeriodAgo = new Date(Date.now() - 24 * HOUR - 60_000);
    await h.deps.db
      .updateTable('workspace_target_scopes')
      .set({ last_proven_at: aPeriodAgo, proof_checked_at: aPeriodAgo })
      .where('workspace_id', '=', id)
      .where('suffix', '=', domain)
      .execute();
    dns.withdraw(challenge.name);
    // An orchestrator of an earlier test file (same Redis prefix, default 60 s interval) may still
    // hold the tick's lock for up to 54 s: the lock is right in production (one instance a tick),
    // here it would keep this test's orchestrator from its first tick (seen once in a full run).
    await h.deps.redis.del(queueKeys.tickLock('scope-reproof'));
    const orchestrator = await startOrchestrator({
      config: h.config,
      log: pino({ level: 'silent' }),
      timing: { reproofEveryMs: 200 },
    });
    try {
      const deadline = Date.now() + 20_000;
      while ((await standing(t.workspaceId)).proofState !== 'suspended' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
      expect(await standing(t.workspaceId)).toMatchObject({ proofState: 'suspended', lastProofOutcome: 'missing' });
    } finally {
      await orchestrator.close();
    }
  }, 40_000);
});
