// No role loads a library or dataset it does not use (issue 19): every Procfile role is started as
// the Procfile starts it, with a hook that logs each module its threads load
// (test/bench/rss/module-log-hook.ts), and what it loaded at rest is checked: mailauth,
// parse5/tough-cookie (the mail and web parsers), undici (the outbound HTTP client), piscina (the
// parse pool) and the IP context dataset are loaded by no role at rest; the IEEE OUI table,
// libphonenumber's metadata and Express only by the web workers, which answer MAC and phone
// lookups; the IP context dataset by a web worker once it answered a lookup with context.
// Real processes over a scratch database (an orchestrator sweeps every job of its database).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readProcfile } from '../../ops/procfile.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { createDb } from '../../src/db/database.ts';
import { WATCHED, childPids, freePort, startRole, type StartedRole } from '../bench/rss/role-process.ts';
import { createScratchDatabase, root, type ScratchDatabase } from '../helpers/processes.ts';

const roles = readProcfile(root).filter((r) => r.name !== 'release');
/** Loaded by no role at rest. */
const NEVER_AT_REST = ['mailauth', 'parse5', 'tough-cookie', 'undici', 'piscina', 'ip dataset'];
/** Loaded only where they are used: the web workers (MAC, phone lookups; the HTTP API). */
const WEB_WORKER_ONLY = ['oui-data', 'libphonenumber', 'express'];

function loadedBy(urls: readonly string[]): string[] {
  return Object.entries(WATCHED)
    .filter(([, fragment]) => urls.some((u) => u.includes(fragment)))
    .map(([name]) => name);
}

/** Watched libraries per process of the role: pid → names loaded by any of its threads. */
function loaded(r: StartedRole): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const [pid, threads] of r.modules()) out.set(pid, loadedBy([...threads.values()].flat()));
  return out;
}

describe('what each Procfile role loads', () => {
  let db: ScratchDatabase;
  let env: Record<string, string | undefined>;
  let key: string;
  beforeAll(async () => {
    db = await createScratchDatabase('rolemods');
    const h = createDb(db.url);
    try {
      const ws = await createWorkspace(h.db, { name: `rolemods-${randomBytes(3).toString('hex')}` });
      key = (await createKey(h.db, process.env.KEY_PEPPER!, { workspace: ws.workspaceId })).key;
    } finally {
      await h.close();
    }
    env = {
      ...process.env,
      DATABASE_URL: db.url,
      REDIS_KEY_PREFIX: `${process.env.REDIS_KEY_PREFIX ?? ''}rolemods${randomBytes(3).toString('hex')}:`,
      METRICS_PORT: undefined,
      NODE_ENV: 'production',
    };
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('lists the roles this test knows', () => {
    expect(roles.map((r) => r.name).sort()).toEqual(
      ['lane-active', 'lane-dns', 'lane-domain', 'lane-mail', 'lane-web', 'orchestrator', 'web'].sort(),
    );
  });

  for (const role of roles.filter((r) => r.name !== 'web')) {
    it(`${role.name} loads none of the parsers, clients or datasets at rest`, { timeout: 90_000 }, async () => {
      const r = await startRole(role, { root, env, modules: true, webWorkers: 1, port: await freePort() });
      try {
        await new Promise((res) => setTimeout(res, 1000));
        const byPid = loaded(r);
        expect([...byPid.keys()]).toEqual([r.child.pid]);
        const threads = r.modules().get(r.child.pid!)!;
        // No parse pool thread at rest: the main thread only.
        expect([...threads.keys()]).toEqual([0]);
        expect(byPid.get(r.child.pid!)).toEqual([]);
      } finally {
        await r.stop();
      }
    });
  }

  it('web: the primary loads none; the workers only the OUI table, libphonenumber and Express, the IP dataset at the first context lookup', {
    timeout: 120_000,
  }, async () => {
    const web = roles.find((r) => r.name === 'web')!;
    const port = await freePort();
    const r = await startRole(web, { root, env, modules: true, webWorkers: 2, port });
    try {
      const primary = r.child.pid!;
      const workers = childPids(primary);
      expect(workers).toHaveLength(2);
      let byPid = loaded(r);
      expect(byPid.get(primary)).toEqual([]);
      for (const w of workers) {
        expect(byPid.get(w), `worker ${w}`).toEqual(expect.arrayContaining(WEB_WORKER_ONLY));
        expect(
          byPid.get(w)!.filter((n) => NEVER_AT_REST.includes(n)),
          `worker ${w}`,
        ).toEqual([]);
      }
      const res = await fetch(`http://127.0.0.1:${port}/v2/lookups/ip`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': `rolemods-${randomBytes(6).toString('hex')}`,
        },
        body: JSON.stringify({ value: '8.8.8.8', includeContext: true }),
      });
      const body = (await res.json()) as { result?: { context?: { asn?: number } } };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.result?.context?.asn).toBe(15169);
      byPid = loaded(r);
      expect(byPid.get(primary)).toEqual([]);
      // The worker that answered loaded the dataset; the other did not.
      expect(workers.filter((w) => byPid.get(w)!.includes('ip dataset'))).toHaveLength(1);
    } finally {
      await r.stop();
    }
  });
});
