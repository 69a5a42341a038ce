// Change detection end to end (CONTRACT §13, issue 28): real MySQL, Redis, orchestrator, every lane
// worker and the lab. The change lab's zone (test/lab/changes-lab.ts) is served in two states
// switched between two jobs: a name appears, one is removed (NXDOMAIN), one changes address, one
// becomes SERVFAIL, the SPF and DMARC TXT records change and the apex page drops a header. The
// second scan, mail and web lookups must mark each correctly: the SERVFAIL name unconfirmed and
// never gone, what appears and disappears new and gone / resolved; and (issue 44) a failed
// observation on either side is a gap, never a change: an MX host whose address questions go
// unanswered, a web lookup whose https side stalls, a name whose DNS failed in the baseline; while
// HTTPS gained after a :443 reset is a change. Then baseline selection,
// the changes route's paging, scopes and tenancy, and a budget-cut second scan.
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { rdapPart, startLab, type RunningLab } from '../lab/serve.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { CHANGES_ZONE, changesAddresses, changesLabPart, changesNames, type ChangesLab } from '../lab/changes-lab.ts';
import { genZoneName } from '../lab/scan-zones.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { createKey } from '../../src/auth/tenancy-repo.ts';
import { acceptJob } from '../../src/jobs/jobs-repo.ts';
import { planJob } from '../../src/jobs/orchestration/plan-job.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { LaneName } from '../../src/queue/streams.ts';
import { comparisonPending, finishComparison, runComparison } from '../../src/jobs/changes/comparison.ts';
import { finalizeJob } from '../../src/jobs/orchestration/finalize-job.ts';
import { groupOf } from '../../src/jobs/changes/change-codes.ts';
import { writeOutputs } from '../../src/jobs/output-writer.ts';
import { lockJob } from '../../src/jobs/tasks/task-rows.ts';
import { inTransaction, type Trx } from '../../src/db/transaction.ts';
import { domainChangeRules } from '../../src/products/domain/changes.ts';
import { registerChangeMetrics } from '../../src/metrics.ts';
import promClient from 'prom-client';
import { claimExpiredJobs, purgeExpiredJobs, purgeJobs } from '../../src/jobs/orchestration/retention.ts';
import { scanChangeRules } from '../../src/products/scan/changes.ts';
import { execFile } from 'node:child_process';
import type { AddressInfo, Server } from 'node:net';
import path from 'node:path';
import { LssClient } from '../../src/client/client.ts';
import { root } from '../helpers/processes.ts';

const GEN = 60;
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: {
    'scan.recursive.v1': { perMinute: 100_000, perHour: 1_000_000 },
    'lookup.mail.v1': { perMinute: 100_000, perHour: 1_000_000 },
    'lookup.web.v1': { perMinute: 100_000, perHour: 1_000_000 },
    'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 },
  },
};

interface Change {
  kind: 'object' | 'finding';
  change: string;
  type: string;
  key: string;
  objectType?: string;
  objectId: string | null;
  baselineObjectId: string | null;
  findingId?: string | null;
  baselineFindingId?: string | null;
  severity?: string;
  changedFields?: string[];
  reason?: string;
}

describe('change detection (CONTRACT §13)', () => {
  let lab: RunningLab;
  let changesLab: ChangesLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  const workers: LaneWorkerHandle[] = [];

  const tenant = (opts: Parameters<typeof fundedTenant>[2] = {}) =>
    fundedTenant(h, 100_000, { limits: GENEROUS, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION, ...opts });

  async function run(key: string, path: string, body: unknown): Promise<Record<string, any>> {
    const res = await client(h.app, key).post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return (await pollTerminal(h, key, res.body.jobRef, 120_000)).body;
  }

  async function pages<T>(key: string, path: string, query = ''): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await client(h.app, key).get(
        `${path}${sep}limit=500${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      out.push(...res.body.items);
      cursor = res.body.page.nextCursor;
    } while (cursor);
    return out;
  }

  const changesOf = (key: string, jobRef: string, query = '&change=new,changed,gone,resolved,unconfirmed,unchanged') =>
    pages<Change>(key, `/v2/jobs/${jobRef}/changes`, query);

  const scanBody = (value: string, profile: string, maxCredits: number) => ({
    profile,
    target: { type: 'domain_name', value },
    options: { active: false, maxCredits },
  });

  beforeAll(async () => {
    lab = await startLab({
      parts: [
        rdapPart,
        mailLabPart,
        scanLabPart({ generated: [GEN] }),
        changesLabPart({ onReady: (l) => (changesLab = l) }),
      ],
    });
    h = await startHarness({ ...labEnv(lab.env), DNS_TIMEOUT_MS: '700', CANCEL_GRACE_MS: '1000' });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    for (const lane of ['dns', 'mail', 'web', 'domain'] as LaneName[]) {
      workers.push(
        await startLaneWorker(lane, {
          config: h.config,
          log,
          blockMs: 100,
          settings: { LANE_POOL_THREADS: 1, LANE_CONCURRENCY: 16 },
        }),
      );
    }
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  describe('a zone served in two states', () => {
    let key: string;
    const first: Record<string, Record<string, any>> = {};
    const second: Record<string, Record<string, any>> = {};
    const changes: Record<string, Change[]> = {};
    const jobs = {
      scan: ['/v2/scans', scanBody(CHANGES_ZONE, 'balanced', 500)],
      mail: ['/v2/lookups/mail', { value: CHANGES_ZONE }],
      web: ['/v2/lookups/web', { url: `https://${CHANGES_ZONE}/`, authorized: false }],
      // Its https side stops answering in state 2 (issue 44: a timeout is a gap).
      webStalls: ['/v2/lookups/web', { url: `https://${changesNames.stalls}/`, authorized: false }],
      // Its :443 resets connections in state 1 and serves HTTPS in state 2: gained, a change.
      webOpens: ['/v2/lookups/web', { url: `https://${changesNames.opens}/`, authorized: false }],
    } as const;

    beforeAll(async () => {
      key = (await tenant()).key;
      changesLab.setState(1);
      for (const [name, [path, body]] of Object.entries(jobs)) first[name] = await run(key, path, body);
      changesLab.setState(2);
      for (const [name, [path, body]] of Object.entries(jobs)) second[name] = await run(key, path, body);
      for (const name of Object.keys(jobs)) changes[name] = await changesOf(key, second[name]!.jobRef);
      // The two-state run, for the record (issue 28's closing note).
      const table = Object.entries(changes).flatMap(([job, list]) =>
        list
          .filter((c) => c.change !== 'unchanged')
          .map(
            (c) =>
              `${job.padEnd(4)} ${c.kind.padEnd(7)} ${c.change.padEnd(11)} ${c.type} ${c.key}` +
              `${c.changedFields ? ` [${c.changedFields.join(', ')}]` : ''}${c.reason ? ` (${c.reason})` : ''}`,
          ),
      );
      console.log(`two-state lab run, second jobs' changes (unchanged left out):\n${table.join('\n')}`);
    }, 300_000);

    const mark = (job: string, kind: 'object' | 'finding', type: string, key: string) =>
      changes[job]!.find((c) => c.kind === kind && c.type === type && c.key === key);

    it('the first jobs have no baseline; the second ones take them, and their counts match the changes route', () => {
      for (const name of Object.keys(jobs)) {
        expect(first[name]!.baseline).toBeNull();
        expect(first[name]!.changes).toBeNull();
        expect(second[name]!.baseline).toMatchObject({
          jobRef: first[name]!.jobRef,
          completedAt: first[name]!.completedAt,
        });
        const counts = { objects: {} as Record<string, number>, findings: {} as Record<string, number> };
        for (const c of changes[name]!) {
          const part = c.kind === 'object' ? counts.objects : counts.findings;
          part[c.change] = (part[c.change] ?? 0) + 1;
        }
        for (const kind of ['objects', 'findings'] as const)
          for (const [m, n] of Object.entries(second[name]!.changes[kind]))
            expect(counts[kind][m] ?? 0, `${name} ${kind} ${m}`).toBe(n);
      }
    });

    it('scan: the new name is new, the removed one gone (NXDOMAIN), the moved one changed, the SERVFAIL one unconfirmed', () => {
      expect(mark('scan', 'object', 'host', changesNames.added)?.change).toBe('new');
      expect(mark('scan', 'object', 'ip_address', changesAddresses.added)?.change).toBe('new');
      const removed = mark('scan', 'object', 'host', changesNames.removed);
      expect(removed).toMatchObject({ change: 'gone' });
      expect(removed?.baselineObjectId).toMatch(/^obj_/);
      expect(mark('scan', 'object', 'ip_address', changesAddresses.removed)?.change).toBe('gone');
      expect(mark('scan', 'object', 'host', changesNames.moves)).toMatchObject({
        change: 'changed',
        changedFields: ['records'],
      });
      expect(mark('scan', 'object', 'ip_address', changesAddresses.movesBefore)?.change).toBe('gone');
      expect(mark('scan', 'object', 'ip_address', changesAddresses.movesAfter)?.change).toBe('new');
      expect(mark('scan', 'object', 'host', changesNames.stays)?.change).toBe('unchanged');
      // Its DNS failed: nothing was observed, so it is never gone, and neither is its address.
      expect(mark('scan', 'object', 'host', changesNames.flaky)).toMatchObject({
        change: 'unconfirmed',
        reason: 'indeterminate',
      });
      expect(mark('scan', 'object', 'ip_address', changesAddresses.flaky)).toMatchObject({
        change: 'unconfirmed',
        reason: 'indeterminate',
      });
      // The apex: its TXT records changed; its page dropped a header.
      expect(mark('scan', 'object', 'domain', CHANGES_ZONE)).toMatchObject({ change: 'changed' });
      expect(mark('scan', 'object', 'domain', CHANGES_ZONE)?.changedFields).toContain('records');
      expect(mark('scan', 'object', 'web_posture', `https://${CHANGES_ZONE}/`)?.change).toBe('changed');
      expect(mark('scan', 'finding', 'web_nosniff_missing', `https://${CHANGES_ZONE}/`)?.change).toBe('new');
      expect(mark('scan', 'finding', 'dmarc_policy_none', CHANGES_ZONE)?.change).toBe('resolved');
      expect(changes.scan!.filter((c) => c.change === 'gone').map((c) => c.key)).not.toContain(changesNames.flaky);
    });

    it('scan, issue 44 item 1: an absence is observed only by the check that produces it, on its subject, completed', () => {
      // An alias into a zone whose servers fail (SERVFAIL, REFUSED): the CNAME was observed (changed);
      // the address set was not resolved, so the old address is not known gone.
      for (const [name, address] of [
        [changesNames.aliased, changesAddresses.aliased],
        [changesNames.refusing, changesAddresses.refusing],
      ] as const) {
        expect(mark('scan', 'object', 'host', name), name).toMatchObject({ change: 'changed' });
        expect(mark('scan', 'object', 'host', name)?.changedFields, name).toEqual(['records']);
        expect(mark('scan', 'object', 'ip_address', address), address).toMatchObject({
          change: 'unconfirmed',
          reason: 'indeterminate',
        });
      }
      // deep is a level (a.deep is under it): its wildcard probe, keyed by deep's name, completed on
      // random labels while deep's own DNS task got SERVFAIL and wrote nothing. The probe observed
      // nothing about deep: unconfirmed, never gone.
      expect(mark('scan', 'object', 'host', changesNames.deep)).toMatchObject({
        change: 'unconfirmed',
        reason: 'indeterminate',
      });
      expect(mark('scan', 'object', 'ip_address', changesAddresses.deep)).toMatchObject({
        change: 'unconfirmed',
        reason: 'indeterminate',
      });
      expect(mark('scan', 'object', 'host', changesNames.underDeep)?.change).toBe('unchanged');
      const gone = changes.scan!.filter((c) => c.change === 'gone' || c.change === 'resolved').map((c) => c.key);
      for (const key of [changesNames.deep, changesAddresses.deep, changesAddresses.aliased, changesAddresses.refusing])
        expect(gone).not.toContain(key);
    });

    it('scan, issue 44 item 2: a question that went unanswered is a gap, not a change', () => {
      // dual's AAAA questions were dropped in state 2, its A answered as before.
      const dual = mark('scan', 'object', 'host', changesNames.dual);
      expect(dual).toMatchObject({ change: 'unconfirmed', reason: 'lane_partial' });
      expect(dual?.changedFields).toBeUndefined();
      expect(mark('scan', 'object', 'ip_address', changesAddresses.dual)?.change).not.toMatch(/^(changed|gone)$/);
      // Its IPv6 address: its name's AAAA question got no answer, so it is not known gone.
      expect(mark('scan', 'object', 'ip_address', changesAddresses.dualV6Key)).toMatchObject({
        change: 'unconfirmed',
        reason: 'indeterminate',
      });
    });

    it('scan, issue 44: a field only the new job has, where the baseline could not look, is no change', () => {
      // recovers: its DNS task got SERVFAIL in the baseline (known there only as an SPF name, with
      // no records); the new one answered. The baseline did not observe it: unconfirmed.
      const recovers = mark('scan', 'object', 'host', changesNames.recovers);
      expect(recovers).toMatchObject({ change: 'unconfirmed', reason: 'indeterminate' });
      expect(recovers?.changedFields).toBeUndefined();
      // A real difference both jobs observed still changes: moves' address (a test above).
      expect(mark('scan', 'object', 'host', changesNames.moves)?.change).toBe('changed');
    });

    it('web lookup, issue 44: a site that reset :443 in the baseline and serves HTTPS now has changed', () => {
      // The reset is the target's answer (its web lane partial in the baseline, the https URL
      // without a status): observed, so the status the URL gained is a change, and so is the posture.
      const url = `https://${changesNames.opens}/`;
      expect(mark('webOpens', 'object', 'web_posture', url)?.change).toBe('changed');
      const u = mark('webOpens', 'object', 'url', url);
      expect(u).toMatchObject({ change: 'changed' });
      expect(u?.changedFields).toContain('status');
    });

    it('mail lookup, issue 44: an MX host whose address questions went unanswered is a gap, not a change', () => {
      // mx2's A and AAAA got no answer in state 2: its addresses, resolution and SMTP sessions were
      // not observed. Unconfirmed (lane_partial), never changed; its address never gone.
      const mx2 = mark('mail', 'object', 'mx_host', changesNames.mx2);
      expect(mx2).toMatchObject({ change: 'unconfirmed', reason: 'lane_partial' });
      expect(mx2?.changedFields).toBeUndefined();
      expect(mark('mail', 'object', 'ip_address', changesAddresses.mx2)?.change).toBe('unconfirmed');
      // The scan holds the MX name as a host with what its mail task wrote on it: the same gap.
      const scanMx2 = mark('scan', 'object', 'host', changesNames.mx2);
      expect(scanMx2?.change).toBe('unconfirmed');
      expect(scanMx2?.changedFields).toBeUndefined();
      // What both observed and differs still changes: the DMARC policy; the SMTP summary (mx2
      // unreachable, then untested) is a gap on both sides.
      const posture = mark('mail', 'object', 'mail_posture', CHANGES_ZONE);
      expect(posture?.change).toBe('changed');
      expect(posture?.changedFields).toContain('dmarc');
      expect(posture?.changedFields).not.toContain('smtp_starttls');
    });

    it('web lookup, issue 44: an https chain that timed out is a gap: the posture is unconfirmed, never changed', () => {
      // In state 2 the https side took the request and never answered; the http one stood in.
      const url = `https://${changesNames.stalls}/`;
      const posture = mark('webStalls', 'object', 'web_posture', url);
      expect(posture).toMatchObject({ change: 'unconfirmed', reason: 'lane_partial' });
      expect(posture?.changedFields).toBeUndefined();
      expect(mark('webStalls', 'object', 'url', url)?.change).toBe('unconfirmed');
      for (const c of changes.webStalls!) expect(c.change, `${c.type} ${c.key}`).not.toMatch(/^(changed|gone)$/);
    });

    it('mail lookup: the DMARC and SPF records changed; p=none resolved', () => {
      expect(mark('mail', 'object', 'mail_posture', CHANGES_ZONE)?.change).toBe('changed');
      expect(mark('mail', 'object', 'mail_posture', CHANGES_ZONE)?.changedFields).toEqual(
        expect.arrayContaining(['dmarc']),
      );
      expect(mark('mail', 'finding', 'dmarc_policy_none', CHANGES_ZONE)).toMatchObject({
        change: 'resolved',
        severity: expect.any(String),
        baselineFindingId: expect.stringMatching(/^fnd_/),
        findingId: null,
      });
    });

    it('web lookup: the posture changed, the missing header is a new finding', () => {
      expect(mark('web', 'object', 'web_posture', `https://${CHANGES_ZONE}/`)?.change).toBe('changed');
      const f = mark('web', 'finding', 'web_nosniff_missing', `https://${CHANGES_ZONE}/`);
      expect(f).toMatchObject({ change: 'new', findingId: expect.stringMatching(/^fnd_/), baselineFindingId: null });
    });

    it('result items, objects and findings carry the marks; the first jobs carry null', async () => {
      const items = await pages<{
        objectId: string;
        type: string;
        key: string;
        change: string | null;
        changedFields?: string[];
      }>(key, `/v2/jobs/${second.scan!.jobRef}/results`);
      for (const i of items) expect(i.change, `${i.type} ${i.key}`).not.toBeNull();
      const moved = items.find((i) => i.type === 'host' && i.key === changesNames.moves)!;
      expect(moved).toMatchObject({ change: 'changed', changedFields: ['records'] });
      const detail = await client(h.app, key).get(`/v2/jobs/${second.scan!.jobRef}/objects/${moved.objectId}`);
      expect(detail.body).toMatchObject({ change: 'changed', changedFields: ['records'] });
      const findings = await pages<{ code: string; change: string | null }>(
        key,
        `/v2/jobs/${second.web!.jobRef}/findings`,
      );
      expect(findings.find((f) => f.code === 'web_nosniff_missing')?.change).toBe('new');
      for (const f of findings) expect(f.change).not.toBeNull();
      const firstItems = await pages<{ change: string | null }>(key, `/v2/jobs/${first.scan!.jobRef}/results`);
      for (const i of firstItems) expect(i.change).toBeNull();
    });

    it('issue 44 item 12: a name the baseline recorded absent, which this job does not hold, is not gone again', async () => {
      // A third scan, still state 2: its baseline (the second) holds removed.changes.test as absent
      // (NXDOMAIN); the third's own DNS task on it completed (NXDOMAIN again).
      const third = await run(key, '/v2/scans', scanBody(CHANGES_ZONE, 'balanced', 500));
      expect(third.baseline.jobRef).toBe(second.scan!.jobRef);
      const id = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${third.jobRef}`.execute(h.deps.db)).rows[0]!
          .id,
      );
      const removed = async () =>
        (await changesOf(key, third.jobRef)).find(
          (c) => c.kind === 'object' && c.type === 'host' && c.key === changesNames.removed,
        );
      expect(await removed()).toMatchObject({ change: 'unchanged' });
      // The job does not hold it (as when a name is folded into its level's wildcard): the absence
      // the baseline recorded is no object that went.
      await sql`UPDATE objects o JOIN (SELECT MIN(id) AS id FROM objects WHERE job_id = ${id}) f
        SET o.folded_into = f.id WHERE o.job_id = ${id} AND o.type = 'host' AND o.okey = ${changesNames.removed}`.execute(
        h.deps.db,
      );
      await sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, counts = '{}', done = 0 WHERE job_id = ${id}`.execute(
        h.deps.db,
      );
      expect(await runComparison(h.deps.db, id, scanChangeRules)).toBe(true);
      const mark = await removed();
      expect(mark).toMatchObject({ change: 'unchanged', objectId: null });
      expect(mark?.baselineObjectId).toMatch(/^obj_/);
    }, 120_000);

    it('pages: limit 1 walks the same list; filters; the cursor is bound to the route and filters; scopes; tenancy', async () => {
      const ref = second.scan!.jobRef as string;
      const all = await changesOf(key, ref, '');
      expect(all.every((c) => c.change !== 'unchanged')).toBe(true);
      const one: Change[] = [];
      let cursor: string | null = null;
      let first1: { body: any } | null = null;
      do {
        const res = await client(h.app, key).get(
          `/v2/jobs/${ref}/changes?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(res.status).toBe(200);
        first1 ??= res;
        expect(res.body.items.length).toBeLessThanOrEqual(1);
        one.push(...res.body.items);
        cursor = res.body.page.nextCursor;
      } while (cursor);
      expect(one).toEqual(all);
      // Objects first, each mark in order: new, changed, gone, …
      const order = ['new', 'changed', 'gone', 'resolved', 'unconfirmed'];
      const rank = (c: Change) => (c.kind === 'object' ? 0 : 10) + order.indexOf(c.change);
      expect([...all].sort((a, b) => rank(a) - rank(b))).toEqual(all);

      const gone = await changesOf(key, ref, '&change=gone');
      expect(gone.length).toBeGreaterThan(0);
      expect(gone.every((c) => c.change === 'gone' && c.kind === 'object')).toBe(true);
      const findings = await changesOf(key, ref, '&kind=finding');
      expect(findings.every((c) => c.kind === 'finding')).toBe(true);
      expect(findings.length).toBe(all.filter((c) => c.kind === 'finding').length);

      const c1 = first1!.body.page.nextCursor as string;
      const onResults = await client(h.app, key).get(`/v2/jobs/${ref}/results?cursor=${encodeURIComponent(c1)}`);
      expect(onResults.status).toBe(400);
      expect(onResults.body.error.code).toBe('invalid_cursor');
      const otherFilter = await client(h.app, key).get(
        `/v2/jobs/${ref}/changes?change=gone&cursor=${encodeURIComponent(c1)}`,
      );
      expect(otherFilter.body.error.code).toBe('invalid_cursor');
      const otherJob = await client(h.app, key).get(
        `/v2/jobs/${second.mail!.jobRef}/changes?cursor=${encodeURIComponent(c1)}`,
      );
      expect(otherJob.body.error.code).toBe('invalid_cursor');
      const bad = await client(h.app, key).get(`/v2/jobs/${ref}/changes?change=vanished`);
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request');

      // Without finding:read: objects only, and the page says so.
      const ws = await sql<{ public_id: string }>`
        SELECT w.public_id FROM jobs j JOIN workspaces w ON w.id = j.workspace_id WHERE j.public_id = ${ref}`.execute(
        h.deps.db,
      );
      const sameWs = await createKey(h.deps.db, h.config.KEY_PEPPER, {
        workspace: ws.rows[0]!.public_id,
        scopes: ['scan:read'],
      });
      const omitted = await client(h.app, sameWs.key).get(`/v2/jobs/${ref}/changes?kind=finding`);
      expect(omitted.status).toBe(200);
      expect(omitted.body).toMatchObject({ findingsOmitted: true, items: [] });
      const objectsOnly = await client(h.app, sameWs.key).get(`/v2/jobs/${ref}/changes?limit=500`);
      expect(objectsOnly.body.findingsOmitted).toBe(true);
      expect(objectsOnly.body.items.every((c: Change) => c.kind === 'object')).toBe(true);
      expect(objectsOnly.body.items.length).toBe(all.filter((c) => c.kind === 'object').length);
      const other = await tenant();
      const foreign = await client(h.app, other.key).get(`/v2/jobs/${ref}/changes`);
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.code).toBe('job_not_found');
      const unauth = await client(h.app).get(`/v2/jobs/${ref}/changes`);
      expect(unauth.status).toBe(401);
    });
  });

  describe('a comparison is stored with the job', () => {
    it('issue 44 item 11: the terminal transaction never compares a scan under the job row lock; a run put back sends the finalize to step 2', async () => {
      const t = await tenant();
      changesLab.setState(1);
      await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'quick', 20));
      changesLab.setState(2);
      const job = await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'quick', 20));
      changesLab.setState(1);
      expect(job.baseline).not.toBeNull();
      const id = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${job.jobRef}`.execute(h.deps.db)).rows[0]!.id,
      );
      const rows = async () =>
        (
          await sql<Record<string, unknown>>`
            SELECT grp, subject_type, subject_key, object_ref, baseline_object_ref, reason FROM job_changes WHERE job_id = ${id}`.execute(
            h.deps.db,
          )
        ).rows
          .map((r) => JSON.stringify(r))
          .sort();
      const whole = await rows();
      // As a late result leaves it (./stale-run.ts): the job not terminal, its run back at its start.
      // started_at now: the reconciler leaves a running job alone for its first seconds.
      const reopen = (trx: Trx) =>
        sql`UPDATE jobs SET status = 'running', completed_at = NULL, started_at = NOW(3) WHERE id = ${id}`
          .execute(trx)
          .then(() =>
            sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, done = 0 WHERE job_id = ${id}`.execute(trx),
          );
      // Under the job row lock, the terminal transaction's calls: nothing is compared there.
      const ROLLBACK = new Error('rollback');
      const seen = await inTransaction(h.deps.db, async (trx) => {
        await lockJob(trx, id);
        await reopen(trx);
        const pending = await comparisonPending(trx, id, scanChangeRules);
        const done = await finishComparison(trx, id, scanChangeRules);
        const runRow = (
          await sql<{
            next_seq: number;
            done: number;
          }>`SELECT next_seq, done FROM change_runs WHERE job_id = ${id}`.execute(trx)
        ).rows[0]!;
        throw Object.assign(ROLLBACK, {
          seen: { pending, done, nextSeq: Number(runRow.next_seq), runDone: Number(runRow.done) },
        });
      }).catch((err) => (err === ROLLBACK ? (err as Error & { seen: unknown }).seen : Promise.reject(err)));
      expect(seen).toEqual({ pending: true, done: null, nextSeq: 1, runDone: 0 });
      // The finalize: back to step 2 (outside the lock), then the terminal transaction finds it complete.
      await inTransaction(h.deps.db, async (trx) => {
        await lockJob(trx, id);
        await reopen(trx);
      });
      await finalizeJob(orchestrator.context, id, 'settle');
      const after = (
        await sql<{ status: string; changes: unknown }>`SELECT status, changes FROM jobs WHERE id = ${id}`.execute(
          h.deps.db,
        )
      ).rows[0]!;
      expect(after.status).toBe(job.status);
      expect(typeof after.changes === 'string' ? JSON.parse(after.changes) : after.changes).toEqual(job.changes);
      expect(await rows()).toEqual(whole);
      const runRow = (await sql<{ done: number }>`SELECT done FROM change_runs WHERE job_id = ${id}`.execute(h.deps.db))
        .rows[0]!;
      expect(Number(runRow.done)).toBe(1);
    }, 120_000);

    it('issue 44 item 7: a job past retention is never taken as a baseline, nor one retention has claimed', async () => {
      const t = await tenant();
      const domain = () => run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      const old = await domain();
      await sql`UPDATE jobs SET completed_at = NOW(3) - INTERVAL ${h.config.JOB_RETENTION_DAYS + 1} DAY WHERE public_id = ${old.jobRef}`.execute(
        h.deps.db,
      );
      expect((await domain()).baseline).toBeNull();
      // Within retention by this orchestrator's clock, past it by a retention pass's (a pass that
      // began as the job ended its window): once claimed, it is nobody's baseline.
      const t2 = await tenant();
      const a = await run(t2.key, '/v2/lookups/domain', { value: 'lab.test' });
      await sql`UPDATE jobs SET completed_at = NOW(3) - INTERVAL 3 DAY WHERE public_id = ${a.jobRef}`.execute(
        h.deps.db,
      );
      const shortRetention = {
        ...orchestrator.context,
        config: { ...orchestrator.context.config, JOB_RETENTION_DAYS: 2 },
      };
      const aId = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${a.jobRef}`.execute(h.deps.db)).rows[0]!.id,
      );
      expect(await claimExpiredJobs(shortRetention, { jobBatch: 1000 })).toContain(aId);
      const b = await run(t2.key, '/v2/lookups/domain', { value: 'lab.test' });
      expect(b.baseline).toBeNull();
      await purgeJobs(shortRetention, [aId]);
      expect((await client(h.app, t2.key).get(`/v2/jobs/${a.jobRef}`)).status).toBe(404);
    });

    it('interrupted between chunks, it resumes where it stopped and ends with the same marks', async () => {
      const t = await tenant();
      changesLab.setState(1);
      await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'balanced', 500));
      changesLab.setState(2);
      const job = await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'balanced', 500));
      changesLab.setState(1);
      const id = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${job.jobRef}`.execute(h.deps.db)).rows[0]!.id,
      );
      const rows = async () =>
        (
          await sql<Record<string, unknown>>`
            SELECT grp, subject_type, subject_key, object_ref, baseline_object_ref, finding_ref, baseline_finding_ref,
              changed_fields, reason FROM job_changes WHERE job_id = ${id}`.execute(h.deps.db)
        ).rows
          .map((r) => JSON.stringify(r))
          .sort();
      const whole = await rows();
      expect(whole.length).toBeGreaterThan(10);
      // As if it had never run; then 3 chunks of 2 objects each, and the process dies.
      await sql`DELETE FROM job_changes WHERE job_id = ${id}`.execute(h.deps.db);
      await sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, counts = '{}', done = 0 WHERE job_id = ${id}`.execute(
        h.deps.db,
      );
      expect(await runComparison(h.deps.db, id, scanChangeRules, { chunk: 2, maxChunks: 3 })).toBe(false);
      const part = await rows();
      expect(part.length).toBeGreaterThan(0);
      expect(part.length).toBeLessThan(whole.length);
      expect(await runComparison(h.deps.db, id, scanChangeRules, { chunk: 2 })).toBe(true);
      expect(await rows()).toEqual(whole);
      const counts = await sql<{ counts: unknown }>`SELECT counts FROM change_runs WHERE job_id = ${id}`.execute(
        h.deps.db,
      );
      const c = counts.rows[0]!.counts;
      expect(typeof c === 'string' ? JSON.parse(c) : c).toMatchObject(job.changes);
    }, 120_000);

    /** Two domain lookups of lab.test; the second's comparison, and what a late result would do to it. */
    async function comparedPair() {
      const t = await tenant();
      await run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      const b = await run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      const job = (
        await sql<{ id: number; workspace_id: number; object_seq: number; finding_seq: number }>`
          SELECT id, workspace_id, object_seq, finding_seq FROM jobs WHERE public_id = ${b.jobRef}`.execute(h.deps.db)
      ).rows[0]!;
      const id = Number(job.id);
      const markOf = async (type: string, key: string) =>
        (
          await sql<{ grp: number; changed_fields: unknown }>`
            SELECT grp, changed_fields FROM job_changes WHERE job_id = ${id} AND subject_type = ${type} AND subject_key = ${key}`.execute(
            h.deps.db,
          )
        ).rows[0];
      // What a late result does: rewrite an object the job already holds (no new object, no new
      // finding: the page counters do not move), under the job row lock.
      const rewrite = (type: string, key: string, projection: Record<string, unknown>) =>
        inTransaction(h.deps.db, async (trx) => {
          await lockJob(trx, id);
          await writeOutputs(trx, [
            {
              origin: { jobId: id, workspaceId: Number(job.workspace_id), productLane: 'registration', distance: 0 },
              out: {
                status: 'completed',
                objects: [{ type, key, projection }],
                relations: [],
                findings: [],
                sources: [],
              },
            },
          ]);
        });
      const counters = async () =>
        (
          await sql<{ object_seq: number; finding_seq: number }>`
            SELECT object_seq, finding_seq FROM jobs WHERE id = ${id}`.execute(h.deps.db)
        ).rows[0]!;
      return { b, id, job, markOf, rewrite, counters };
    }

    it('complete, then a late result rewrites an object it passed: the terminal transaction compares again; one log line, the metrics', async () => {
      const { b, id, job, markOf, rewrite, counters } = await comparedPair();
      const lines: Array<Record<string, any>> = [];
      const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
      // The orchestrator's registry gets them (registerChangeMetrics); read them as it serves them.
      const registry = new promClient.Registry();
      registerChangeMetrics(registry);
      const metric = async (name: string) => {
        const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await registry.metrics());
        expect(m, name).not.toBeNull();
        return Number(m![1]);
      };
      const seconds0 = await metric('lss_change_comparison_seconds_count');
      const objects0 = await metric('lss_change_comparison_objects_sum');

      // Unchanged: counted, no row (issue 44 item 14).
      expect(await markOf('registration', 'lab.test')).toBeUndefined();
      await rewrite('registration', 'lab.test', { registrar: { name: 'Another Registrar', ianaId: '1' } });
      expect(await counters()).toEqual({ object_seq: job.object_seq, finding_seq: job.finding_seq });
      const done = await inTransaction(h.deps.db, async (trx) => {
        await lockJob(trx, id);
        return finishComparison(trx, id, domainChangeRules, { log, inPlace: true });
      });
      const after = await markOf('registration', 'lab.test');
      expect(after?.grp).toBe(groupOf('object', 'changed'));
      expect(JSON.stringify(after?.changed_fields)).toContain('registrar');
      const row = (await sql<{ changes: unknown }>`SELECT changes FROM jobs WHERE id = ${id}`.execute(h.deps.db))
        .rows[0]!;
      const counts = typeof row.changes === 'string' ? JSON.parse(row.changes) : row.changes;
      expect(counts.objects.changed).toBe(1);
      expect(counts.objects.changed).toBe(b.changes.objects.changed + 1);

      // One log line per comparison, with its counts and duration; the metrics observed it.
      expect(done).toMatchObject({ counts });
      expect(done!.objects).toBe(Object.values(counts.objects as Record<string, number>).reduce((a, n) => a + n, 0));
      expect(lines.filter((l) => l.msg === 'change comparison done')).toEqual([
        expect.objectContaining({
          jobId: id,
          objects: done!.objects,
          findings: done!.findings,
          changes: counts,
          durationMs: expect.any(Number),
          chunks: expect.any(Number),
        }),
      ]);
      expect(await metric('lss_change_comparison_seconds_count')).toBe(seconds0 + 1);
      expect(await metric('lss_change_comparison_objects_sum')).toBe(objects0 + done!.objects);
    });

    it('mid-way: a write rewrites an object a chunk already compared; the run starts again and sees it', async () => {
      const { id, markOf, rewrite } = await comparedPair();
      await sql`DELETE FROM job_changes WHERE job_id = ${id}`.execute(h.deps.db);
      await sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, counts = '{}', done = 0 WHERE job_id = ${id}`.execute(
        h.deps.db,
      );
      expect(await runComparison(h.deps.db, id, domainChangeRules, { chunk: 2, maxChunks: 1 })).toBe(false);
      // An object the first chunk passed (at or before its position) and found unchanged (no row).
      const passed = (
        await sql<{ subject_type: string; subject_key: string }>`
          SELECT o.type AS subject_type, o.okey AS subject_key FROM objects o
            JOIN change_runs r ON r.job_id = o.job_id AND o.okey_hash <= r.after_hash
            LEFT JOIN job_changes jc ON jc.job_id = o.job_id AND jc.object_id = o.id
          WHERE o.job_id = ${id} AND o.folded_into IS NULL AND jc.job_id IS NULL
          ORDER BY o.okey_hash LIMIT 1`.execute(h.deps.db)
      ).rows[0]!;
      expect(passed).toBeDefined();
      await rewrite(passed.subject_type, passed.subject_key, { rewrittenLate: true });
      expect(await runComparison(h.deps.db, id, domainChangeRules, { chunk: 2 })).toBe(true);
      const mark = await markOf(passed.subject_type, passed.subject_key);
      expect(mark?.grp).toBe(groupOf('object', 'changed'));
      expect(JSON.stringify(mark?.changed_fields)).toContain('rewrittenLate');
      // Every identity once: the rows of the first pass did not stay next to the second's.
      const dup = await sql<{ n: number }>`
        SELECT COUNT(*) AS n FROM (SELECT subject_type, subject_key, object_type FROM job_changes WHERE job_id = ${id}
          GROUP BY subject_type, subject_key, object_type HAVING COUNT(*) > 1) d`.execute(h.deps.db);
      expect(Number(dup.rows[0]!.n)).toBe(0);
    });

    it('issue 44 item 14: only what is not unchanged is stored; unchanged is counted, marked and listed from the job itself', async () => {
      const t = await tenant();
      await run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      const b = await run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      const id = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${b.jobRef}`.execute(h.deps.db)).rows[0]!.id,
      );
      const o = b.changes.objects;
      const f = b.changes.findings;
      expect(o.unchanged).toBeGreaterThan(2);
      expect(f.unchanged).toBeGreaterThan(0);
      // Stored: one row per identity that is not unchanged, nothing else.
      const stored = await sql<{ grp: number; n: number }>`
        SELECT grp, COUNT(*) AS n FROM job_changes WHERE job_id = ${id} GROUP BY grp`.execute(h.deps.db);
      const total = stored.rows.reduce((a, r) => a + Number(r.n), 0);
      expect(total).toBe(
        o.new + o.changed + o.gone + o.unconfirmed + f.new + f.resolved + f.unconfirmed + f.resurfaced,
      );
      expect(
        stored.rows.filter((r) =>
          [groupOf('object', 'unchanged'), groupOf('finding', 'unchanged')].includes(Number(r.grp)),
        ),
      ).toEqual([]);
      // Listed (change=unchanged), a page of one at a time: every unchanged identity once, paired
      // with the baseline's ids.
      const one = async (query: string) => {
        const out: Change[] = [];
        let cursor: string | null = null;
        do {
          const res = await client(h.app, t.key).get(
            `/v2/jobs/${b.jobRef}/changes?limit=1${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          );
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          out.push(...res.body.items);
          cursor = res.body.page.nextCursor;
        } while (cursor);
        return out;
      };
      const objects = await one('&change=unchanged&kind=object');
      expect(objects.length).toBe(o.unchanged);
      expect(new Set(objects.map((c) => `${c.type}|${c.key}`)).size).toBe(o.unchanged);
      for (const c of objects)
        expect(c).toMatchObject({
          kind: 'object',
          change: 'unchanged',
          objectId: expect.stringMatching(/^obj_/),
          baselineObjectId: expect.stringMatching(/^obj_/),
        });
      const findings = await one('&change=unchanged&kind=finding');
      expect(findings.length).toBe(f.unchanged + f.suppressed);
      for (const c of findings)
        expect(c).toMatchObject({
          kind: 'finding',
          change: 'unchanged',
          objectType: expect.any(String),
          findingId: expect.stringMatching(/^fnd_/),
          baselineFindingId: expect.stringMatching(/^fnd_/),
          severity: expect.any(String),
        });
      // Every mark at once, in the documented order: each identity once.
      const all = await changesOf(
        t.key,
        b.jobRef,
        '&change=new,changed,gone,resolved,unconfirmed,unchanged,resurfaced',
      );
      expect(all.filter((c) => c.change === 'unchanged').length).toBe(o.unchanged + f.unchanged + f.suppressed);
      // The marks on the job's own pages: unchanged without a row, as with one.
      const results = await pages<{ change: string | null }>(t.key, `/v2/jobs/${b.jobRef}/results`);
      expect(results.filter((r) => r.change === 'unchanged').length).toBe(o.unchanged);
      expect(results.every((r) => r.change !== null)).toBe(true);
      const fpage = await pages<{ change: string | null }>(t.key, `/v2/jobs/${b.jobRef}/findings`);
      expect(fpage.filter((r) => r.change === 'unchanged').length).toBe(f.unchanged + f.suppressed);
    });

    it('the baseline is kept while a job still has to be compared with it; its purge does not undo the comparison', async () => {
      const t = await tenant();
      const a = await run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      const b = await run(t.key, '/v2/lookups/domain', { value: 'lab.test' });
      expect(b.baseline.jobRef).toBe(a.jobRef);
      // Two identical lookups a few seconds apart: nothing new, changed or gone (the lab's RDAP
      // dates are whole UTC days: test/lab/rdap-fixtures.ts).
      expect(b.changes.objects).toMatchObject({ new: 0, changed: 0, gone: 0 });
      const before = await changesOf(t.key, b.jobRef);
      expect(before.find((c) => c.type === 'registration')).toMatchObject({ change: 'unchanged' });
      expect(before.filter((c) => c.kind === 'object' && c.change !== 'unchanged')).toEqual([]);
      await sql`UPDATE jobs SET completed_at = NOW(3) - INTERVAL 400 DAY WHERE public_id = ${a.jobRef}`.execute(
        h.deps.db,
      );
      await sql`UPDATE jobs SET status = 'running' WHERE public_id = ${b.jobRef}`.execute(h.deps.db);
      await purgeExpiredJobs(orchestrator.context);
      expect((await client(h.app, t.key).get(`/v2/jobs/${a.jobRef}`)).status).toBe(200);
      await sql`UPDATE jobs SET status = 'completed' WHERE public_id = ${b.jobRef}`.execute(h.deps.db);
      await purgeExpiredJobs(orchestrator.context);
      expect((await client(h.app, t.key).get(`/v2/jobs/${a.jobRef}`)).status).toBe(404);
      const after = await client(h.app, t.key).get(`/v2/jobs/${b.jobRef}`);
      expect(after.body).toMatchObject({ baseline: b.baseline, changes: b.changes });
      // What was stored stays; an unchanged item is read from the job's own rows (issue 44 item
      // 14), and its baseline ids from the baseline's while it is retained: null once purged.
      expect(await changesOf(t.key, b.jobRef)).toEqual(
        before.map((c) =>
          c.change !== 'unchanged'
            ? c
            : { ...c, baselineObjectId: null, ...(c.kind === 'finding' ? { baselineFindingId: null } : {}) },
        ),
      );
    });
  });

  describe('a deep scan: DKIM selectors are probed, so its mail task is never more than partial', () => {
    it("a DMARC policy fixed is resolved: observed by the mail task's dmarc lane, whatever its DKIM lane did", async () => {
      const t = await tenant();
      changesLab.setState(1);
      const a = await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'deep', 2000));
      changesLab.setState(2);
      const b = await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'deep', 2000));
      changesLab.setState(1);
      expect(b.baseline.jobRef).toBe(a.jobRef);
      const id = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${b.jobRef}`.execute(h.deps.db)).rows[0]!.id,
      );
      // The apex's mail task: partial as a whole (DKIM), its dmarc lane completed.
      const task = (
        await sql<{ id: number; status: string; output: unknown }>`
          SELECT id, status, output FROM tasks WHERE job_id = ${id} AND product_lane = 'mail' AND object_key = ${CHANGES_ZONE}`.execute(
          h.deps.db,
        )
      ).rows[0]!;
      expect(task.status).toBe('partial');
      const output = (typeof task.output === 'string' ? JSON.parse(task.output) : task.output) as {
        projection: { lanes: Array<{ lane: string; status: string; reason?: string }> };
      };
      const laneStatus = (l: string) => output.projection.lanes.find((x) => x.lane === l)?.status;
      expect(laneStatus('dkim')).toBe('partial');
      expect(laneStatus('dmarc')).toBe('completed');

      const finding = async () =>
        (await changesOf(t.key, b.jobRef)).find(
          (c) => c.kind === 'finding' && c.type === 'dmarc_policy_none' && c.key === CHANGES_ZONE,
        );
      expect(await finding()).toMatchObject({ change: 'resolved', baselineFindingId: expect.stringMatching(/^fnd_/) });
      expect(b.changes.findings.resolved).toBeGreaterThan(0);

      // Had the dmarc lane not completed, the same disappearance is unconfirmed, with that lane's
      // reason: the task's outcome as a whole is not what decides.
      for (const [status, reason] of [
        ['partial', 'lane_partial'],
        ['timeout', 'indeterminate'],
      ] as const) {
        for (const l of output.projection.lanes) if (l.lane === 'dmarc') l.status = status;
        await sql`UPDATE tasks SET output = ${JSON.stringify(output)} WHERE id = ${task.id}`.execute(h.deps.db);
        await sql`DELETE FROM job_changes WHERE job_id = ${id}`.execute(h.deps.db);
        await sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, counts = '{}', done = 0 WHERE job_id = ${id}`.execute(
          h.deps.db,
        );
        expect(await runComparison(h.deps.db, id, scanChangeRules)).toBe(true);
        expect(await finding(), status).toMatchObject({ change: 'unconfirmed', reason });
      }
    }, 300_000);
  });

  describe('the SDK and lss', () => {
    let server: Server;
    let baseUrl: string;
    const lss = (key: string, ...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        const env = Object.fromEntries(
          Object.entries(process.env).filter(([k]) => !['NO_COLOR', 'FORCE_COLOR', 'CI'].includes(k)),
        );
        execFile(
          process.execPath,
          [path.join(root, 'src/client/cli/main.ts'), ...args],
          { cwd: root, env: { ...env, LSS_API_KEY: key, LSS_BASE_URL: baseUrl }, timeout: 120_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
        );
      });

    beforeAll(async () => {
      server = await new Promise<Server>((resolve) => {
        const s = h.app.listen(0, '127.0.0.1', () => resolve(s));
      });
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise((r) => server?.close(r));
      changesLab.setState(1);
    });

    it('the SDK reads the changes; lss prints them after the results and --fail-on-new gates on a new finding', async () => {
      const t = await tenant();
      const sdk = new LssClient({ apiKey: t.key, baseUrl });
      changesLab.setState(1);
      const before = await sdk.run('web', { url: `https://${CHANGES_ZONE}/` });
      expect(before.job.baseline).toBeNull();
      changesLab.setState(2);
      // --fail-on-new low: the page's missing header is a new low finding → exit 1, whatever the coverage.
      const gate = await lss(t.key, '--json', 'lookup', 'web', `https://${CHANGES_ZONE}/`, '--fail-on-new', 'low');
      expect(gate.code, gate.stderr).toBe(1);
      const doc = JSON.parse(gate.stdout);
      expect(doc.outcome).toBe('fail_on');
      expect(doc.job.baseline.jobRef).toBe(before.job.jobRef);
      expect(doc.changes.items).toContainEqual(
        expect.objectContaining({ kind: 'finding', change: 'new', type: 'web_nosniff_missing', severity: 'low' }),
      );
      const after = doc.job.jobRef as string;
      // Above the new finding's severity: the job's own outcome decides.
      const high = await lss(t.key, '--json', 'job', 'show', after, '--fail-on-new', 'high');
      expect(high.code, high.stderr).toBe(JSON.parse(high.stdout).exitCode);
      expect(JSON.parse(high.stdout).outcome).not.toBe('fail_on');
      // The SDK: the same list the route gives, and its filters.
      const all = await sdk.collectChanges(after);
      expect(all.baseline?.jobRef).toBe(before.job.jobRef);
      expect(all.items).toEqual(await changesOf(t.key, after, ''));
      const newFindings: unknown[] = [];
      for await (const c of sdk.changes(after, { kind: 'finding', change: ['new'], limit: 1 })) newFindings.push(c);
      expect(newFindings).toEqual(all.items.filter((c) => c.kind === 'finding' && c.change === 'new'));
      // Human output: the changes table comes last, after the job's tables.
      const human = await lss(t.key, 'job', 'changes', after);
      expect(human.stdout).toContain(`Changes since ${before.job.jobRef}`);
      expect(human.stdout).toContain('web_nosniff_missing');
      const shown = await lss(t.key, 'job', 'show', after, '--wait');
      expect(shown.stdout.indexOf('Changes since')).toBeGreaterThan(shown.stdout.indexOf(after));
      const bad = await lss(t.key, 'job', 'changes', after, '--change', 'vanished');
      expect(bad.code).toBe(64);
    }, 180_000);
  });

  describe('baseline selection', () => {
    const domain = (key: string) => run(key, '/v2/lookups/domain', { value: 'lab.test' });

    it("another workspace's job is never a baseline; the workspace's own newest one is", async () => {
      const a = await tenant();
      const b = await tenant();
      const a1 = await domain(a.key);
      const b1 = await domain(b.key);
      expect(b1.baseline).toBeNull();
      const a2 = await domain(a.key);
      expect(a2.baseline?.jobRef).toBe(a1.jobRef);
      const a3 = await domain(a.key);
      expect(a3.baseline?.jobRef).toBe(a2.jobRef);
    });

    it('another profile (or product, or target) is never a baseline', async () => {
      const t = await tenant();
      await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'quick', 20));
      const balanced = await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'balanced', 500));
      expect(balanced.baseline).toBeNull();
      const mail = await run(t.key, '/v2/lookups/mail', { value: CHANGES_ZONE });
      expect(mail.baseline).toBeNull();
      const quick = await run(t.key, '/v2/scans', scanBody(CHANGES_ZONE, 'quick', 20));
      expect(quick.baseline).not.toBeNull();
      expect(quick.baseline.jobRef).not.toBe(balanced.jobRef);
    });

    it('a failed job, and a job asked to cancel (whatever it ended as), are never a baseline', async () => {
      const t = await tenant();
      const d1 = await domain(t.key);
      await sql`UPDATE jobs SET status = 'failed' WHERE public_id = ${d1.jobRef}`.execute(h.deps.db);
      const d2 = await domain(t.key);
      expect(d2.baseline).toBeNull();
      // A cancel that arrived as the job was ending: it ended completed, yet saw only part of the target.
      await sql`UPDATE jobs SET cancel_requested_at = NOW(3) WHERE public_id = ${d2.jobRef}`.execute(h.deps.db);
      const d3 = await domain(t.key);
      expect(d3.baseline).toBeNull();
      await sql`UPDATE jobs SET status = 'cancelled' WHERE public_id = ${d3.jobRef}`.execute(h.deps.db);
      const d4 = await domain(t.key);
      expect(d4.baseline).toBeNull();
      const d5 = await domain(t.key);
      expect(d5.baseline?.jobRef).toBe(d4.jobRef);
    });

    it('issue 44 item 12: a job its deadline ended (partial) is never a baseline', async () => {
      const t = await tenant();
      const d1 = await domain(t.key);
      const id = Number(
        (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${d1.jobRef}`.execute(h.deps.db)).rows[0]!.id,
      );
      // As the deadline sweeper finds it: running, its tasks done (started now: the reconciler waits).
      await sql`UPDATE jobs SET status = 'running', completed_at = NULL, started_at = NOW(3) WHERE id = ${id}`.execute(
        h.deps.db,
      );
      expect(await finalizeJob(orchestrator.context, id, 'deadline')).toBe('partial');
      const d2 = await domain(t.key);
      expect(d2.baseline).toBeNull();
      const d3 = await domain(t.key);
      expect(d3.baseline?.jobRef).toBe(d2.jobRef);
    });

    it('two jobs that start at once do not take each other', async () => {
      const t = await tenant();
      const older = await domain(t.key);
      const principal = (await new Authenticator(h.deps.db, h.config.KEY_PEPPER, 0).verify(t.key))!;
      const accept = (i: number) =>
        acceptJob(h.deps.db, {
          principal,
          product: 'lookup.domain.v1',
          target: { type: 'domain_name', value: 'lab.test' },
          profile: null,
          input: { value: 'lab.test' },
          price: 2,
          deadlineMs: 120_000,
          requestId: `req_changes_${i}`,
          claim: undefined,
        });
      const [x, y] = await Promise.all([accept(1), accept(2)]);
      await Promise.all([planJob(orchestrator.context, x.jobId), planJob(orchestrator.context, y.jobId)]);
      const [jx, jy] = await Promise.all([
        pollTerminal(h, t.key, x.jobRef, 60_000),
        pollTerminal(h, t.key, y.jobRef, 60_000),
      ]);
      expect(jx.body.baseline?.jobRef).toBe(older.jobRef);
      expect(jy.body.baseline?.jobRef).toBe(older.jobRef);
    });
  });

  it('a budget-cut second scan: the names it could not recheck are unconfirmed (not_rechecked), never gone', async () => {
    const t = await tenant();
    const zone = genZoneName(GEN);
    const full = await run(t.key, '/v2/scans', scanBody(zone, 'deep', 2000));
    expect(full.coverage.limitations.map((l: { code: string }) => l.code)).not.toContain('budget_exhausted');
    const cut = await run(t.key, '/v2/scans', scanBody(zone, 'deep', 50));
    expect(cut.baseline.jobRef).toBe(full.jobRef);
    const list = await changesOf(t.key, cut.jobRef);
    const hosts = list.filter((c) => c.kind === 'object' && c.type === 'host');
    // The zone did not change: nothing may be gone; what was not rechecked is said so.
    expect(list.filter((c) => c.change === 'gone' || c.change === 'resolved')).toEqual([]);
    // Names of the baseline the budget did not reach: not held, never rechecked, said so.
    const notReached = hosts.filter((c) => c.objectId === null);
    expect(notReached.length).toBeGreaterThan(0);
    for (const c of notReached) expect(c, c.key).toMatchObject({ change: 'unconfirmed', reason: 'not_rechecked' });
    expect(cut.lanes.reduce((n: number, l: { budgetExhausted: number }) => n + l.budgetExhausted, 0)).toBeGreaterThan(
      0,
    );
    expect(cut.changes.objects.gone).toBe(0);
    expect(cut.changes.objects.unconfirmed).toBeGreaterThanOrEqual(notReached.length);
  }, 240_000);
});
