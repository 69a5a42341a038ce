// The admin CLI as an operator runs it: a real process, JSON on stdout, exit codes.
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEnv } from '../helpers/harness.ts';
import { isWellFormedApiKey } from '../../src/auth/api-key.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { servedApex } from '../lab/zones.ts';
import { sql } from 'kysely';
import { createScratchDatabase } from '../helpers/processes.ts';
import { createDb } from '../../src/db/database.ts';
import { generateSecret, SecretBox } from '../../src/jobs/monitors/webhook-secrets.ts';

const root = path.resolve(import.meta.dirname, '../..');

function admin(...args: string[]): { code: number; out: any; stdout: string; stderr: string } {
  return adminSync({}, ...args);
}

/**
 * The CLI in a process of its own without blocking this one: the lab DNS it asks runs in this
 * process (spawnSync would stop it from answering).
 */
function adminWith(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; out: any; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['src/admin/cli.ts', ...args],
      { cwd: root, env: testEnv(env), encoding: 'utf8', timeout: 30_000 },
      (err, stdout, stderr) => {
        let out: unknown = null;
        try {
          out = JSON.parse(stdout);
        } catch {
          // left null: the assertion on `out` reports the raw stdout
        }
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, out, stdout, stderr });
      },
    );
  });
}

function adminSync(
  env: Record<string, string>,
  ...args: string[]
): { code: number; out: any; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['src/admin/cli.ts', ...args], {
    cwd: root,
    env: testEnv(env),
    encoding: 'utf8',
    timeout: 30_000,
  });
  let out: unknown = null;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    // left null: the assertion on `out` reports the raw stdout
  }
  return { code: r.status ?? -1, out, stdout: r.stdout, stderr: r.stderr };
}

describe('npm run admin', () => {
  it('creates a workspace with credits, scope and acceptance; a key shown once; shows balances', () => {
    const ws = admin(
      'workspace',
      'create',
      '--name',
      'Acme',
      '--credits',
      '500',
      '--active',
      '--approve-scope',
      'acme.example.com',
      '--accept-responsible-use',
    );
    expect(ws.code, ws.stderr).toBe(0);
    expect(ws.out.workspaceId).toMatch(/^ws_[0-9A-Z]{26}$/);
    expect(ws.out.credits).toEqual({ granted: 500, reserved: 0, captured: 0, available: 500 });

    const key = admin(
      'key',
      'create',
      '--workspace',
      ws.out.workspaceId,
      '--scopes',
      'scan:read,finding:read',
      '--monthly-limit',
      '100',
    );
    expect(key.code, key.stderr).toBe(0);
    expect(isWellFormedApiKey(key.out.key)).toBe(true);
    expect(key.out.scopes).toEqual(['scan:read', 'finding:read']);

    const show = admin('workspace', 'show', ws.out.workspaceId);
    expect(show.code).toBe(0);
    expect(show.out).toMatchObject({
      activeCapability: true,
      approvedScopes: [{ domain: 'acme.example.com', proof: 'operator_override', verifiedAt: null }],
      credits: { available: 500 },
    });
    expect(show.out.responsibleUse.version).toBeTruthy();
    // The key itself is never shown again: only its hint.
    expect(show.stdout).not.toContain(key.out.key);
    expect(show.out.keys[0]).toMatchObject({ keyId: key.out.keyId, monthlyCreditLimit: 100, revokedAt: null });
  });

  it('grants credits idempotently by reference, revokes keys, sets limits', () => {
    const ws = admin('workspace', 'create', '--name', 'Beta');
    const g1 = admin(
      'credits',
      'grant',
      '--workspace',
      ws.out.workspaceId,
      '--amount',
      '40',
      '--reference',
      'invoice-1',
    );
    const g2 = admin(
      'credits',
      'grant',
      '--workspace',
      ws.out.workspaceId,
      '--amount',
      '40',
      '--reference',
      'invoice-1',
    );
    expect(g1.out).toMatchObject({ granted: 40, duplicateReference: false, credits: { granted: 40 } });
    expect(g2.out).toMatchObject({ granted: 0, duplicateReference: true, credits: { granted: 40 } });

    const key = admin('key', 'create', '--workspace', ws.out.workspaceId);
    const r1 = admin('key', 'revoke', '--key', key.out.keyId);
    expect(r1.out).toEqual({ keyId: key.out.keyId, revoked: true, alreadyRevoked: false });
    expect(admin('key', 'revoke', key.out.keyId).out.alreadyRevoked).toBe(true);

    const scope = admin('scope', 'approve', '--workspace', ws.out.workspaceId, '--domain', '*.Beta.Example.COM.');
    expect(scope.out).toEqual({
      workspaceId: ws.out.workspaceId,
      approved: 'beta.example.com',
      proof: 'operator_override',
    });
    const set = admin('workspace', 'set', '--workspace', ws.out.workspaceId, '--active', '--accept-responsible-use');
    expect(set.out).toMatchObject({
      activeCapability: true,
      approvedScopes: [{ domain: 'beta.example.com', proof: 'operator_override' }],
    });

    const limits = admin(
      'limits',
      'set',
      '--workspace',
      ws.out.workspaceId,
      '--app-per-minute',
      '60',
      '--app-burst',
      '5',
      '--product',
      'lookup.mac.v1',
      '--per-minute',
      '10',
      '--per-hour',
      '100',
    );
    expect(limits.code, limits.stderr).toBe(0);
    expect(limits.out.rateLimits).toEqual({
      app: { perMinute: 60, burst: 5 },
      products: { 'lookup.mac.v1': { perMinute: 10, perHour: 100 } },
    });
  });

  it('refuses a public suffix of either section as an approved scope: exit 65, a clear message, nothing stored', () => {
    const ws = admin('workspace', 'create', '--name', 'Pages user');
    expect(ws.code, ws.stderr).toBe(0);
    for (const [domain, section] of [
      ['github.io', 'private section'],
      ['co.uk', 'icann section'],
      ['test', 'outside the public suffix list'],
    ]) {
      const r = admin('scope', 'approve', '--workspace', ws.out.workspaceId, '--domain', domain!);
      expect(r.code, domain).toBe(65);
      expect(r.out, domain).toMatchObject({ error: 'invalid_scope' });
      expect(r.out.message, domain).toMatch(/is a public suffix/);
      expect(r.out.message, domain).toContain(section);
      expect(r.stderr, domain).toContain('not an approvable scope');
    }
    const create = admin('workspace', 'create', '--name', 'Heroku user', '--approve-scope', 'herokuapp.com');
    expect(create.code).toBe(65);
    expect(create.out).toMatchObject({ error: 'invalid_scope' });
    // An owner's name below a private suffix is approvable.
    const ok = admin('scope', 'approve', '--workspace', ws.out.workspaceId, '--domain', 'alice.github.io');
    expect(ok.out).toEqual({
      workspaceId: ws.out.workspaceId,
      approved: 'alice.github.io',
      proof: 'operator_override',
    });
  });

  it.each([
    [['workspace', 'create'], 64, 'usage'],
    [['credits', 'grant', '--workspace', 'ws_00000000000000000000000000', '--amount', 'ten'], 64, 'usage'],
    [
      [
        'limits',
        'set',
        '--workspace',
        'ws_00000000000000000000000000',
        '--product',
        'lookup.nope.v1',
        '--per-minute',
        '1',
      ],
      64,
      'usage',
    ],
    [['workspace', 'show', 'ws_00000000000000000000000000'], 66, 'not_found'],
    [['key', 'revoke', '--key', 'key_00000000000000000000000000'], 66, 'not_found'],
    [['key', 'create', '--workspace', 'ws_00000000000000000000000000', '--bogus'], 64, 'usage'],
  ])('refuses %j with exit %i and a JSON error', (args, code, error) => {
    const r = admin(...args);
    expect(r.code).toBe(code);
    expect(r.out).toMatchObject({ error });
  });
});

describe('approved scopes: names someone controls (issue 30 items 4 and 5)', () => {
  it.each([
    ['cluster.local', /special-use/],
    ['corp.internal', /special-use/],
    ['10.0.0.1', /IP address/],
    ['8.8.8', /numeric/],
    ['0.1', /numeric/],
    ['-foo.com', /LDH/],
  ])('refuses %s as a scope, in scope approve and in workspace create: exit 65, nothing stored', (domain, why) => {
    const ws = admin('workspace', 'create', '--name', 'Scopes');
    // `--domain=-foo.com`: the form the CLI takes for a value that starts with a dash.
    const r = admin('scope', 'approve', '--workspace', ws.out.workspaceId, `--domain=${domain}`);
    expect(r.code, r.stdout).toBe(65);
    expect(r.out).toMatchObject({ error: 'invalid_scope' });
    expect(r.out.message).toMatch(why);
    expect(admin('scope', 'list', '--workspace', ws.out.workspaceId).out.scopes).toEqual([]);
    const create = admin(
      'workspace',
      'create',
      '--name',
      'Scopes 2',
      '--approve-scope',
      'ok.example.com',
      `--approve-scope=${domain}`,
    );
    expect(create.code).toBe(65);
    expect(create.out).toMatchObject({ error: 'invalid_scope' });
  });

  it('lists scopes with their proof, and revokes one', () => {
    const ws = admin('workspace', 'create', '--name', 'Lister', '--approve-scope', 'one.example.com');
    admin('scope', 'approve', '--workspace', ws.out.workspaceId, '--domain', 'two.example.com');
    const list = admin('scope', 'list', '--workspace', ws.out.workspaceId);
    expect(list.code, list.stderr).toBe(0);
    expect(list.out).toEqual({
      workspaceId: ws.out.workspaceId,
      scopes: ['one.example.com', 'two.example.com'].map((domain) => ({
        domain,
        proof: 'operator_override',
        approvedAt: expect.any(String),
        verifiedAt: null,
        // Never re-proven (issue 45): an operator's approval has no proof to keep.
        proofState: 'not_required',
        lastProvenAt: null,
        lastProofAt: null,
        lastProofOutcome: null,
        lastProofDetail: null,
        suspendedAt: null,
      })),
    });
    const revoke = admin('scope', 'revoke', '--workspace', ws.out.workspaceId, '--domain', 'one.example.com');
    expect(revoke.out).toEqual({ workspaceId: ws.out.workspaceId, revoked: 'one.example.com' });
    expect(admin('scope', 'list', '--workspace', ws.out.workspaceId).out.scopes.map((x: any) => x.domain)).toEqual([
      'two.example.com',
    ]);
    const again = admin('scope', 'revoke', '--workspace', ws.out.workspaceId, '--domain', 'one.example.com');
    expect(again.code).toBe(66);
    expect(again.out).toMatchObject({ error: 'not_found' });
  });

  describe('proof of control: scope challenge, then scope approve --verify against the lab DNS', () => {
    let dns: LabDns;
    let env: Record<string, string>;
    const ZONE = 'owned.test';
    beforeAll(async () => {
      dns = await startLabDns({
        zones: [
          {
            origin: ZONE,
            // ns.owned.test is the lab DNS itself: `--verify` asks it directly (TCP 53, mapped).
            records: servedApex(ZONE),
            behaviours: [{ name: '_lss-challenge.flaky', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
          },
        ],
      });
      env = {
        DNS_SERVERS: `[${dns.host}]:${dns.port}`,
        ALLOW_SPECIAL_USE_DOMAINS: 'test',
        DNS_TIMEOUT_MS: '1000',
        ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
        OUTBOUND_PORT_MAP: `53=${dns.port}`,
      };
    });
    afterAll(async () => {
      await dns?.close();
    });

    it('gives the record to publish, approves only once it is there (verified), and marks an approval without proof', async () => {
      const ws = await adminWith(env, 'workspace', 'create', '--name', 'Owner');
      const W = ws.out.workspaceId;
      const challenge = await adminWith(env, 'scope', 'challenge', '--workspace', W, '--domain', `shop.${ZONE}`);
      expect(challenge.code, challenge.stderr).toBe(0);
      expect(challenge.out).toEqual({
        name: `_lss-challenge.shop.${ZONE}`,
        value: expect.stringMatching(/^lss-[0-9a-f]{40}$/),
      });
      // The same token again: a record published from the first answer stays valid.
      expect((await adminWith(env, 'scope', 'challenge', '--workspace', W, '--domain', `shop.${ZONE}`)).out).toEqual(
        challenge.out,
      );

      const early = await adminWith(env, 'scope', 'approve', '--workspace', W, '--domain', `shop.${ZONE}`, '--verify');
      expect(early.code, early.stdout).toBe(65);
      expect(early.out).toMatchObject({ error: 'proof_missing' });
      expect(early.out.message).toContain(challenge.out.value);
      expect((await adminWith(env, 'scope', 'list', '--workspace', W)).out.scopes).toEqual([]);

      dns.publish(challenge.out.name, 'TXT', [['v=other'], [challenge.out.value]]);
      const ok = await adminWith(env, 'scope', 'approve', '--workspace', W, '--domain', `shop.${ZONE}`, '--verify');
      expect(ok.code, ok.stdout).toBe(0);
      expect(ok.out).toEqual({ workspaceId: W, approved: `shop.${ZONE}`, proof: 'verified' });

      // Without --verify: an operator's approval, said so wherever scopes are shown.
      await adminWith(env, 'scope', 'approve', '--workspace', W, '--domain', `blog.${ZONE}`);
      const show = await adminWith(env, 'workspace', 'show', W);
      const never = { lastProvenAt: null, lastProofAt: null, lastProofOutcome: null, lastProofDetail: null };
      expect(show.out.approvedScopes).toEqual([
        {
          domain: `blog.${ZONE}`,
          proof: 'operator_override',
          approvedAt: expect.any(String),
          verifiedAt: null,
          proofState: 'not_required',
          ...never,
          suspendedAt: null,
        },
        {
          domain: `shop.${ZONE}`,
          proof: 'verified',
          approvedAt: expect.any(String),
          verifiedAt: expect.any(String),
          // Issue 45: when the zone's servers last held the token (re-proven every SCOPE_REPROVE_HOURS).
          proofState: 'proven',
          lastProvenAt: expect.any(String),
          lastProofAt: expect.any(String),
          lastProofOutcome: 'present',
          lastProofDetail: null,
          suspendedAt: null,
        },
      ]);
      expect((await adminWith(env, 'scope', 'list', '--workspace', W)).out.scopes).toEqual(show.out.approvedScopes);

      // Revoked: the token goes with it; a new challenge is a new token.
      await adminWith(env, 'scope', 'revoke', '--workspace', W, '--domain', `shop.${ZONE}`);
      const next = await adminWith(env, 'scope', 'challenge', '--workspace', W, '--domain', `shop.${ZONE}`);
      expect(next.out.value).not.toBe(challenge.out.value);
    }, 90_000); // nine CLI processes, each a Node start: slow on a loaded machine

    it('a resolver that cannot say is no proof: exit 75, proof_indeterminate, nothing approved', async () => {
      const ws = await adminWith(env, 'workspace', 'create', '--name', 'Flaky');
      const W = ws.out.workspaceId;
      await adminWith(env, 'scope', 'challenge', '--workspace', W, '--domain', `flaky.${ZONE}`);
      const r = await adminWith(env, 'scope', 'approve', '--workspace', W, '--domain', `flaky.${ZONE}`, '--verify');
      expect(r.code).toBe(75);
      expect(r.out).toMatchObject({ error: 'proof_indeterminate' });
      expect(r.out.message).toContain('SERVFAIL');
      expect((await adminWith(env, 'scope', 'list', '--workspace', W)).out.scopes).toEqual([]);
    }, 90_000);

    it('--verify without a challenge first says what to run', async () => {
      const ws = await adminWith(env, 'workspace', 'create', '--name', 'Hasty');
      const r = await adminWith(
        env,
        'scope',
        'approve',
        '--workspace',
        ws.out.workspaceId,
        '--domain',
        `x.${ZONE}`,
        '--verify',
      );
      expect(r.code).toBe(65);
      expect(r.out.message).toContain('scope challenge');
    });
  });
});

describe('webhooks rekey (issue 44 item 5): the previous WEBHOOK_SECRET_KEY can be retired', () => {
  it('re-seals every secret under the current key, bound to its monitor, and names the ones no key opens', async () => {
    const scratch = await createScratchDatabase('rekeycli');
    const handle = createDb(scratch.url, { connectionLimit: 2 });
    try {
      const [oldKey, newKey] = ['o'.repeat(40), 'n'.repeat(40)];
      const refs = [`mon_${'R'.repeat(26)}`, `mon_${'S'.repeat(26)}`];
      const secret = generateSecret();
      const sealed = [
        new SecretBox(oldKey).seal(secret, refs[0]!),
        new SecretBox('x'.repeat(40)).seal(secret, refs[1]!),
      ];
      for (const [i, ref] of refs.entries()) {
        await sql`INSERT INTO monitors (public_id, workspace_id, api_key_id, product, request, interval_seconds, paused,
            webhook_url, webhook_secret)
          VALUES (${ref}, 1, 1, 'lookup.domain.v1', '{}', 3600, 1, 'https://127.0.0.1/h', ${sealed[i]})`.execute(
          handle.db,
        );
      }
      const r = adminSync(
        { DATABASE_URL: scratch.url, WEBHOOK_SECRET_KEY: newKey, WEBHOOK_SECRET_KEY_PREVIOUS: oldKey },
        'webhooks',
        'rekey',
      );
      expect(r.code).toBe(0);
      expect(r.out).toMatchObject({ monitors: 2, resealed: 1, unreadable: [refs[1]] });
      const row = await sql<{ webhook_secret: Buffer }>`SELECT webhook_secret FROM monitors
        WHERE public_id = ${refs[0]!}`.execute(handle.db);
      expect(new SecretBox(newKey).open(row.rows[0]!.webhook_secret, refs[0]!)).toBe(secret);
    } finally {
      await handle.close();
      await scratch.drop();
    }
  }, 60_000);
});
