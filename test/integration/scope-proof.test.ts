// Issue 30 item 4 through HTTP, on the real MariaDB and the lab DNS: approval means control.
//   - a verified scope admits active work while _lss-challenge.<scope> holds the workspace's token,
//     and is refused 403 approved_target_scope_required (details.reason proof_missing) once it is
//     gone; a resolver that cannot answer is 503 service_unavailable with Retry-After, never proof;
//   - an operator's approval without proof admits as before;
//   - rows that approve nothing (stored before the CLI refused them) are removed by migration 011
//     and by the release's prune, and approve nothing meanwhile.
// No lane worker runs here: a request that passes the active gates (step 6) stops at readiness
// (step 9, scan_profile_unavailable), which is how "admitted by the gates" is read.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import { freePort } from '../helpers/processes.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { servedApex } from '../lab/zones.ts';
import { createApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { approveScope, challengeScope, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { pruneUnapprovableScopes } from '../../src/auth/scope-prune.ts';
import { specialUsePolicy } from '../../src/net/special-use.ts';
import { MIGRATIONS_DIR } from '../../src/db/migrations.ts';

const ZONE = 'proven.test';

describe('proof of control at admission', () => {
  let dns: LabDns;
  let h: Harness;

  beforeAll(async () => {
    // The lab DNS is the resolver and the zone's own server (ns.proven.test is 127.0.0.1, its TCP
    // port 53 mapped to the lab's): proofs ask the zone's server directly.
    dns = await startLabDns({ zones: [{ origin: ZONE, records: servedApex(ZONE) }] });
    h = await startHarness({
      DNS_SERVERS: `[${dns.host}]:${dns.port}`,
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
      OUTBOUND_PORT_MAP: `53=${dns.port}`,
      ALLOW_SPECIAL_USE_DOMAINS: 'test',
      DNS_TIMEOUT_MS: '1000',
      // Every active request asks DNS: the removal is seen at once (the default trusts a found token an hour).
      SCOPE_PROOF_CACHE_SECONDS: '0',
    });
  });

  afterAll(async () => {
    await h?.close();
    await dns?.close();
  });

  const activeTenant = () => createTenant(h, { active: true, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION });
  const advanced = (value: string) => ({
    profile: 'advanced',
    target: { type: 'domain_name', value },
    options: { active: true, maxCredits: 100 },
  });

  /** Challenge, publish, approve --verify: a verified scope. */
  async function verifiedScope(workspaceId: string, domain: string) {
    const challenge = await challengeScope(h.deps.db, workspaceId, domain, specialUsePolicy(h.config));
    dns.publish(challenge.name, 'TXT', [[challenge.value]]);
    const approved = await approveScope(h.deps.db, workspaceId, domain, {
      policy: specialUsePolicy(h.config),
      verifyWith: { resolver: h.deps.runtime.services.resolver!, servers: h.deps.runtime.services.outbound! },
    });
    expect(approved.proof).toBe('verified');
    return challenge;
  }

  it('admits while the TXT record holds the token; refuses with proof_missing once it is gone; admits again when it is back', async () => {
    const t = await activeTenant();
    const challenge = await verifiedScope(t.workspaceId, `shop.${ZONE}`);
    const scan = () => client(h.app, t.key).post('/v2/scans', advanced(`api.shop.${ZONE}`));

    expect((await scan()).body.error.code).toBe('scan_profile_unavailable'); // past the gates

    dns.withdraw(challenge.name);
    const refused = await scan();
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: 'approved_target_scope_required',
      retryable: false,
      details: { reason: 'proof_missing', scope: `shop.${ZONE}`, record: `_lss-challenge.shop.${ZONE}` },
    });

    // Another value at the name is not the token either.
    dns.publish(challenge.name, 'TXT', [['lss-someone-elses-token']]);
    expect((await scan()).body.error.details.reason).toBe('proof_missing');

    dns.publish(challenge.name, 'TXT', [[challenge.value]]);
    expect((await scan()).body.error.code).toBe('scan_profile_unavailable');
  });

  it("a web lookup's authorized work passes the same gate", async () => {
    const t = await activeTenant();
    const challenge = await verifiedScope(t.workspaceId, `web.${ZONE}`);
    const lookup = () =>
      client(h.app, t.key).post('/v2/lookups/web', { url: `https://www.web.${ZONE}/`, authorized: true });
    expect((await lookup()).body.error.code).toBe('capability_unavailable'); // past the gates
    dns.withdraw(challenge.name);
    expect((await lookup()).body.error).toMatchObject({
      code: 'approved_target_scope_required',
      details: { reason: 'proof_missing' },
    });
  });

  it("an operator's approval without proof admits without asking DNS", async () => {
    const t = await activeTenant();
    await approveScope(h.deps.db, t.workspaceId, `ops.${ZONE}`, { policy: specialUsePolicy(h.config) });
    expect((await client(h.app, t.key).post('/v2/scans', advanced(`ops.${ZONE}`))).body.error.code).toBe(
      'scan_profile_unavailable',
    );
  });

  it('a resolver that cannot answer is no proof and no refusal: 503 service_unavailable, Retry-After, proof_indeterminate', async () => {
    const t = await activeTenant();
    await verifiedScope(t.workspaceId, `dark.${ZONE}`);
    // The same service, but its resolver points at a port nothing listens on.
    const config = parseConfig({
      ...process.env,
      ...Object.fromEntries(Object.entries(h.config).filter(([, v]) => typeof v === 'string')),
      DNS_SERVERS: `[127.0.0.1]:${await freePort()}`,
      DNS_TIMEOUT_MS: '300',
      ALLOW_SPECIAL_USE_DOMAINS: 'test',
      SCOPE_PROOF_CACHE_SECONDS: '0',
    });
    const dark = createApp({ ...h.deps, runtime: createProductRuntime(config, pino({ level: 'silent' })) });
    const res = await client(dark, t.key).post('/v2/scans', advanced(`dark.${ZONE}`));
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({
      code: 'service_unavailable',
      retryable: true,
      details: { reason: 'proof_indeterminate' },
    });
    expect(res.headers['retry-after']).toBe('30');
  });
});

describe('rows that approve nothing', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('migration 011 removes what SQL can judge; the release prune removes public suffixes; none approved anything meanwhile', async () => {
    const t = await createTenant(h, { active: true, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION });
    const ws = await workspaceInternalId(h.deps.db, t.workspaceId);
    const bad = [
      'com',
      'co.uk',
      'github.io',
      'cluster.local',
      'corp.internal',
      '10.0.0.1',
      '8.8.8',
      '0.1',
      '-foo.com',
      '_dmarc.example.com',
      '10.in-addr.arpa',
    ];
    const good = ['shop.example.com', 'alice.github.io', 'lab.test'];
    for (const suffix of [...bad, ...good])
      await sql`INSERT INTO workspace_target_scopes (workspace_id, suffix) VALUES (${ws}, ${suffix})`.execute(
        h.deps.db,
      );
    const scan = (value: string) =>
      client(h.app, t.key).post('/v2/scans', {
        profile: 'advanced',
        target: { type: 'domain_name', value },
        options: { active: true, maxCredits: 100 },
      });
    // Meanwhile: `com` approves no .com name, `github.io` no owner below it.
    expect((await scan('victim.com')).body.error.code).toBe('approved_target_scope_required');
    expect((await scan('bob.github.io')).body.error.code).toBe('approved_target_scope_required');
    expect((await scan('shop.example.com')).body.error.code).toBe('scan_profile_unavailable');

    // The migration's DELETE statements, run again on these rows (they are idempotent).
    const migration = readFileSync(path.join(MIGRATIONS_DIR, '011_scope_proof.sql'), 'utf8');
    const deletes = migration
      .replace(/^--.*$/gm, '')
      .split(';')
      .map((x) => x.trim())
      .filter((x) => /^DELETE/i.test(x));
    expect(deletes.length).toBeGreaterThanOrEqual(4);
    for (const d of deletes) await sql.raw(d).execute(h.deps.db);
    const rows = async () =>
      (
        await sql<{
          suffix: string;
        }>`SELECT suffix FROM workspace_target_scopes WHERE workspace_id = ${ws} ORDER BY suffix`.execute(h.deps.db)
      ).rows.map((r) => r.suffix);
    expect(await rows()).toEqual(['alice.github.io', 'co.uk', 'github.io', 'lab.test', 'shop.example.com']);

    const pruned = await pruneUnapprovableScopes(h.deps.db);
    expect(
      pruned
        .filter((p) => p.workspaceId === ws)
        .map((p) => p.suffix)
        .sort(),
    ).toEqual(['co.uk', 'github.io']);
    expect(await rows()).toEqual(['alice.github.io', 'lab.test', 'shop.example.com']);
  });
});
