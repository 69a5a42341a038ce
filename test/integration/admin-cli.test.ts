// The admin CLI as an operator runs it: a real process, JSON on stdout, exit codes.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testEnv } from '../helpers/harness.ts';
import { isWellFormedApiKey } from '../../src/auth/api-key.ts';

const root = path.resolve(import.meta.dirname, '../..');

function admin(...args: string[]): { code: number; out: any; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['src/admin/cli.ts', ...args], {
    cwd: root,
    env: testEnv(),
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
      'acme.example',
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
      approvedScopes: ['acme.example'],
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

    const scope = admin('scope', 'approve', '--workspace', ws.out.workspaceId, '--domain', '*.Beta.Example.');
    expect(scope.out).toEqual({ workspaceId: ws.out.workspaceId, approved: 'beta.example' });
    const set = admin('workspace', 'set', '--workspace', ws.out.workspaceId, '--active', '--accept-responsible-use');
    expect(set.out).toMatchObject({ activeCapability: true, approvedScopes: ['beta.example'] });

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
    expect(ok.out).toEqual({ workspaceId: ws.out.workspaceId, approved: 'alice.github.io' });
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
