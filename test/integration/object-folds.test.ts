// Folding a name into the object it is not distinct from (src/jobs/object-folds.ts), through the
// real output writer on MySQL and read back through the result and object routes: a name recorded
// before it was found to be a wildcard answer leaves the pages, its relations and findings move to
// the wildcard object, which lists it; a later output that names it again lands there too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { publicId } from '../../src/contract/ids.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { writeOutput, type OutputOrigin, type OutputRows } from '../../src/jobs/output-writer.ts';
import { SEVERITIES, type ObjectRef } from '../../src/contract/tasks.ts';

const APEX: ObjectRef = { type: 'domain', key: 'fold.test' };
const GHOST: ObjectRef = { type: 'host', key: 'ghost.fold.test' };
const LATE: ObjectRef = { type: 'host', key: 'late.fold.test' };
const WILDCARD: ObjectRef = { type: 'host', key: '*.fold.test' };
const CERT: ObjectRef = { type: 'certificate', key: 'c0ffee' };

function rows(partial: Partial<OutputRows>): OutputRows {
  return { status: 'completed', objects: [], relations: [], findings: [], sources: [], ...partial };
}

describe('object folds (a name only the wildcard answers)', () => {
  let h: Harness;
  let t: Tenant;
  let origin: OutputOrigin;
  let jobRef: string;

  const write = (out: OutputRows) => inTransaction(h.deps.db, (trx) => writeOutput(trx, origin, out));
  const items = async () =>
    (await client(h.app, t.key).get(`/v2/jobs/${jobRef}/results?limit=500`)).body.items as Array<{
      objectId: string;
      type: string;
      key: string;
      projection: Record<string, any>;
    }>;

  beforeAll(async () => {
    h = await startHarness();
    t = await createTenant(h);
    const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
    const key = await h.deps.db
      .selectFrom('api_keys')
      .select('id')
      .where('public_id', '=', t.keyId)
      .executeTakeFirstOrThrow();
    jobRef = publicId('job');
    const ins = await h.deps.db
      .insertInto('jobs')
      .values({
        public_id: jobRef,
        workspace_id: wsId,
        api_key_id: Number(key.id),
        product: 'scan.recursive.v1',
        status: 'running',
        profile: 'balanced',
        target_type: 'domain_name',
        target_value: 'fold.test',
        input: '{}',
        request_id: publicId('req'),
        credits_reserved: 0,
        credits_released: null,
        settled_at: null,
        result: null,
        coverage: null,
        month: '2026-11',
        started_at: new Date(),
        completed_at: null,
        cancel_requested_at: null,
        deadline_at: new Date(Date.now() + 3_600_000),
      })
      .executeTakeFirstOrThrow();
    origin = { jobId: Number(ins.insertId), workspaceId: wsId, productLane: 'dns', distance: 0 };
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a recorded name leaves the pages; its relation and finding move to the wildcard object, which lists it', async () => {
    // The apex's DNS records ghost as its MX (a stub: no lanes, provenance only), with a finding on it.
    await write(
      rows({
        objects: [
          { ...APEX, projection: { name: APEX.key } },
          {
            ...GHOST,
            discovered: true,
            distance: 1,
            projection: { name: GHOST.key, foundVia: 'mx', foundFrom: APEX.key },
          },
        ],
        relations: [{ from: GHOST, relation: 'mx_of', to: APEX }],
        findings: [
          {
            code: 'test_on_ghost',
            severity: SEVERITIES[0]!,
            confidence: 'firm',
            title: 't',
            summary: 'on ghost',
            object: GHOST,
          },
        ],
      }),
    );
    const ghostId = (await items()).find((i) => i.key === GHOST.key)!.objectId;
    // Then ghost's own DNS equals the wildcard's: it folds.
    await write(
      rows({
        objects: [{ ...WILDCARD, discovered: true, projection: { name: WILDCARD.key, wildcard: true } }],
        folds: [{ object: GHOST, into: WILDCARD, detail: { foundVia: 'mx' } }],
      }),
    );
    const after = await items();
    expect(after.map((i) => i.key)).not.toContain(GHOST.key);
    const wildcard = after.find((i) => i.key === WILDCARD.key)!;
    expect(wildcard.projection.collapsed).toEqual({
      count: 1,
      names: [{ name: GHOST.key, foundVia: 'mx', foundFrom: APEX.key }],
    });
    expect((await client(h.app, t.key).get(`/v2/jobs/${jobRef}/objects/${ghostId}`)).status).toBe(404);
    const detail = await client(h.app, t.key).get(`/v2/jobs/${jobRef}/objects/${wildcard.objectId}`);
    const apexId = after.find((i) => i.key === APEX.key)!.objectId;
    expect(detail.body.relations).toEqual([{ relation: 'mx_of', direction: 'outgoing', objectId: apexId }]);
    expect(detail.body.findings).toHaveLength(1);
    const findings = await client(h.app, t.key).get(`/v2/jobs/${jobRef}/findings`);
    expect(findings.body.items.map((f: { objectId: string }) => f.objectId)).toEqual([wildcard.objectId]);
  });

  it('a name folded before anything recorded it is never recreated by a later output', async () => {
    await write(
      rows({
        objects: [{ ...WILDCARD, discovered: true, projection: { name: WILDCARD.key, wildcard: true } }],
        folds: [{ object: LATE, into: WILDCARD }],
      }),
    );
    // A certificate found later names it (a SAN), and the same fold comes again (a redelivery).
    await write(
      rows({
        objects: [
          { ...CERT, projection: { subject: 'CN=late' } },
          { ...LATE, discovered: true, projection: { name: LATE.key, foundVia: 'san' } },
        ],
        relations: [{ from: LATE, relation: 'san_of', to: CERT }],
      }),
    );
    await write(
      rows({
        objects: [{ ...WILDCARD, discovered: true, projection: { name: WILDCARD.key, wildcard: true } }],
        folds: [{ object: LATE, into: WILDCARD }],
      }),
    );
    const after = await items();
    expect(after.map((i) => i.key)).not.toContain(LATE.key);
    const wildcard = after.find((i) => i.key === WILDCARD.key)!;
    expect(wildcard.projection.collapsed.count).toBe(2);
    expect(wildcard.projection.collapsed.names).toContainEqual({ name: LATE.key });
    const detail = await client(h.app, t.key).get(`/v2/jobs/${jobRef}/objects/${wildcard.objectId}`);
    const certId = after.find((i) => i.key === CERT.key)!.objectId;
    expect(detail.body.relations).toContainEqual({ relation: 'san_of', direction: 'outgoing', objectId: certId });
  });
});
