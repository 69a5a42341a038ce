// Issue 45 item 4: revoking stops active work in flight. `scope revoke`, `workspace set
// --no-active` or a new responsible-use version must stop the active tasks a running job has
// queued, not only new requests: the lane runner asks activeAuthorizationGone before an active
// task (the active lane's, an authorized web lookup's) sends anything, and the planner
// (apply-result.ts) finds no approved scope to plan in. This is the rule on the real MariaDB, as
// the admin CLI changes it; isActiveTask says which tasks it guards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeAuthorizationGone } from '../../src/auth/keys-repo.ts';
import { revokeScope, setWorkspaceFlags, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { isActiveTask } from '../../workers/lane-runner/runner.ts';
import { createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

const SCOPE = 'revoke-lab.test';

describe('active work re-checks its authorization (issue 45 item 4)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE });
  });
  afterAll(async () => {
    await h?.close();
  });

  const authorized = async () => {
    const t = await createTenant(h, {
      active: true,
      acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
      approveScopes: [SCOPE],
    });
    return { t, id: await workspaceInternalId(h.deps.db, t.workspaceId) };
  };
  const gone = (id: number, scope: string | null = SCOPE, policy = h.config.RESPONSIBLE_USE_VERSION) =>
    activeAuthorizationGone(h.deps.db, id, scope, policy);

  it('holds while capability, acceptance and scope all hold', async () => {
    const { id } = await authorized();
    expect(await gone(id)).toBeNull();
    expect(await gone(id, null)).toBeNull();
  });

  it('scope revoke stops it (an operator override or a verified scope alike)', async () => {
    const { t, id } = await authorized();
    await revokeScope(h.deps.db, t.workspaceId, SCOPE);
    expect(await gone(id)).toMatch(/revoked/);
    expect(await gone(id, null)).toBeNull(); // the planner's question: capability and acceptance only
  });

  it('workspace set --no-active stops it', async () => {
    const { t, id } = await authorized();
    await setWorkspaceFlags(h.deps.db, t.workspaceId, { active: false });
    expect(await gone(id)).toMatch(/active capability/);
    expect(await gone(id, null)).toMatch(/active capability/);
  });

  it('a new responsible-use version stops it until it is accepted', async () => {
    const { t, id } = await authorized();
    expect(await gone(id, SCOPE, 'v-next')).toMatch(/responsible-use/);
    await setWorkspaceFlags(h.deps.db, t.workspaceId, { acceptResponsibleUse: 'v-next' });
    expect(await gone(id, SCOPE, 'v-next')).toBeNull();
  });

  it('guards the active lane and authorized web tasks, not passive ones', () => {
    expect(isActiveTask({ lane: 'active', params: {} })).toBe(true);
    expect(isActiveTask({ lane: 'web', params: { authorized: true } })).toBe(true);
    expect(isActiveTask({ lane: 'web', params: { authorized: false } })).toBe(false);
    expect(isActiveTask({ lane: 'dns', params: {} })).toBe(false);
  });
});
