// Issue 30 item 7: what a check may store is capped, whatever the target sends. The hostile web
// host of test/helpers/hostile-web-evidence.ts (22 responses with 63 KiB HSTS headers, a page of
// <meta> CSP policies at their caps) made a 2.5 MB output for one web task before (the issue's
// own case, with more headers, 4.1 MB); through the lane runner it is now within STORED_CAPS, the
// cut fields marked. fast-check then draws hostile outputs of every shape (deep, wide, long
// strings, long lists) and checks the caps hold, that the marks name what was cut, and that an
// output within the caps is stored as it is.
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { hostileWebEvidence } from '../helpers/hostile-web-evidence.ts';
import { assessWebEvidence } from '../../src/products/web/assess.ts';
import { buildHttpOutput } from '../../src/products/web/http-check.ts';
import { boundStoredOutput, OUTPUT_TRUNCATED, STORED_CAPS } from '../../src/products/kit/stored-output.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { CheckContext, CheckSpec } from '../../src/products/kit/product-contract.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';
import { executeCheck } from '../../workers/lane-runner/execute-check.ts';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/** Every string and list in `v`, with the path to it. */
function* leaves(v: unknown, path = ''): Generator<{ path: string; value: unknown }> {
  yield { path, value: v };
  if (Array.isArray(v)) for (let i = 0; i < v.length; i++) yield* leaves(v[i], `${path}[${i}]`);
  else if (v !== null && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) yield* leaves(x, path ? `${path}.${k}` : k);
}

function withinCaps(out: CheckOutput): void {
  expect(bytes(out.projection)).toBeLessThanOrEqual(STORED_CAPS.projectionBytes);
  for (const o of out.objects) expect(bytes(o.projection)).toBeLessThanOrEqual(STORED_CAPS.objectProjectionBytes);
  const stored = {
    projection: out.projection,
    objects: out.objects.map((o) => o.projection),
    findings: out.findings.map((f) => ({ title: f.title, summary: f.summary, evidence: f.evidence })),
    limitations: out.limitations.map((l) => l.message),
  };
  for (const { path, value } of leaves(stored)) {
    if (typeof value === 'string') expect(value.length, path).toBeLessThanOrEqual(STORED_CAPS.fieldChars);
    if (Array.isArray(value)) expect(value.length, path).toBeLessThanOrEqual(STORED_CAPS.listItems);
  }
}

const task: LaneTask = {
  id: 1,
  jobId: 1,
  workspaceId: 7,
  objectKey: 'https://h.example.com/0',
  check: 'web.http',
  lane: 'web',
  productLane: 'http',
  distance: 0,
  params: {},
  status: 'pending',
  attempts: 0,
  jobStatus: 'running',
  target: 'https://h.example.com/0',
};

describe('stored output caps', () => {
  it('the hostile web host: the lane stores at most the caps, marks the cut fields, and says so', async () => {
    const e = hostileWebEvidence();
    const raw = buildHttpOutput(e, assessWebEvidence(e));
    const rawBytes = bytes(raw);
    const spec: CheckSpec = { name: 'web.http', lane: 'web', timeoutMs: 30_000, run: async () => raw };
    const result = await executeCheck(
      spec,
      task,
      { runtime: {} as CheckContext['runtime'] },
      new AbortController().signal,
      pino({ level: 'silent' }),
    );
    expect(result.kind).toBe('done');
    const out = (result as { output: CheckOutput }).output;
    const storedBytes = bytes(out);
    process.stdout.write(`hostile web output: ${rawBytes} bytes built, ${storedBytes} stored\n`);
    expect(rawBytes).toBeGreaterThan(2 * 1024 * 1024); // what the target made us build
    withinCaps(out);
    expect(storedBytes).toBeLessThan(STORED_CAPS.projectionBytes + 64 * 1024);
    // The facts that decide findings and the score are still there; what was cut is marked where it was.
    const p = out.projection as any;
    expect(p.status).toBe(200);
    expect(p.headers.hsts.maxAge).toBe(31_536_000);
    expect(p.chains.https.hops).toHaveLength(11);
    expect(p.chains.https.hops[0].truncated).toEqual(['hsts']);
    expect(p.chains.https.hops[0].hsts.startsWith('max-age=31536000; includeSubDomains;')).toBe(true);
    expect(out.limitations.map((l) => l.code)).toContain(OUTPUT_TRUNCATED);
    // A finding's evidence that quotes the header is cut too.
    for (const f of out.findings)
      for (const ev of f.evidence ?? []) expect(ev.summary.length).toBeLessThanOrEqual(STORED_CAPS.fieldChars);
  });

  it('counts are capped too: objects, relations, findings, limitations; what names a dropped object goes with it (issue 45 item 8)', () => {
    const obj = (i: number) => ({
      type: 'host',
      key: `h${i}.example.test`,
      distance: 1,
      projection: { name: `h${i}` },
    });
    const ref = (i: number) => ({ type: 'host', key: `h${i}.example.test` });
    const out: CheckOutput = {
      status: 'completed',
      projection: { names: 3000 },
      objects: Array.from({ length: 3000 }, (_, i) => obj(i)),
      relations: Array.from({ length: 6000 }, (_, i) => ({
        from: ref(i % 3000),
        relation: 'discovered_from' as const,
        to: ref(0),
      })),
      findings: Array.from({ length: 1500 }, (_, i) => ({
        code: 'scan_x',
        severity: 'info' as const,
        confidence: 'firm' as const,
        title: 't',
        summary: 's',
        object: ref(i * 2),
      })),
      limitations: Array.from({ length: 150 }, (_, i) => ({ code: `l${i}`, message: 'm' })),
      sources: [],
    };
    const b = boundStoredOutput(out);
    expect(b.objects.length).toBe(STORED_CAPS.objects);
    expect(b.relations.length).toBeLessThanOrEqual(STORED_CAPS.relations);
    expect(b.findings.length).toBeLessThanOrEqual(STORED_CAPS.findings);
    expect(b.limitations.length).toBeLessThanOrEqual(STORED_CAPS.limitations);
    const keys = new Set(b.objects.map((o) => o.key));
    expect(b.relations.every((r) => keys.has(r.from.key) && keys.has(r.to.key))).toBe(true);
    expect(b.findings.every((f) => keys.has(f.object.key))).toBe(true);
    expect(b.projection.truncated).toEqual(expect.arrayContaining(['objects', 'relations', 'findings', 'limitations']));
    expect(b.projection.omitted).toMatchObject({ objects: 1000 });
    expect(b.limitations.map((l) => l.code)).toContain(OUTPUT_TRUNCATED);
    expect(boundStoredOutput(b)).toEqual(b);
  });

  it('an output within the caps is stored as it is, with no limitation added', () => {
    const out: CheckOutput = {
      status: 'completed',
      projection: { a: 'x'.repeat(100), list: [1, 2, 3], nested: { b: ['y', 'z'], n: null, t: true } },
      objects: [{ type: 'host', key: 'a.test', projection: { name: 'a.test' } }],
      relations: [],
      findings: [
        {
          code: 'c',
          severity: 'low',
          confidence: 'firm',
          title: 't',
          summary: 's',
          object: { type: 'host', key: 'a.test' },
          evidence: [{ summary: 'e' }],
        },
      ],
      limitations: [{ code: 'l', message: 'm' }],
      sources: [],
    };
    expect(boundStoredOutput(out)).toEqual(out);
  });

  it('fast-check: any output, however deep, wide or long, is stored within the caps; bounding twice changes nothing more', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 64 }),
      fc.integer({ min: 0, max: 20_000 }).map((n) => 'x'.repeat(n)),
      fc.integer({ min: 0, max: 70_000 }).map((n) => 'é'.repeat(n)),
    );
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: 'small', maxDepth: 5 },
        text,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('tree'), { maxLength: 8 }),
        fc
          .integer({ min: 0, max: 3000 })
          .map((n) => Array.from({ length: n }, (_, i) => `item-${i}-${'p'.repeat(i % 50)}`)),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tie('tree'), { maxKeys: 6 }),
      ),
    }));
    const record = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tree, { maxKeys: 8 });
    fc.assert(
      fc.property(
        record,
        fc.array(record, { maxLength: 4 }),
        text,
        fc.array(text, { maxLength: 1200 }),
        (p, objs, summary, evidence) => {
          const out: CheckOutput = {
            status: 'completed',
            projection: p,
            objects: objs.map((o, i) => ({ type: 'host', key: `h${i}.test`, projection: o })),
            relations: [],
            findings: [
              {
                code: 'c',
                severity: 'low',
                confidence: 'firm',
                title: 't',
                summary,
                object: { type: 'host', key: 'h0.test' },
                evidence: evidence.map((s) => ({ summary: s })),
              },
            ],
            limitations: [{ code: 'l', message: summary }],
            sources: [],
          };
          const once = boundStoredOutput(out);
          withinCaps(once);
          const cut = bytes(once) !== bytes(out);
          expect(once.limitations.some((l) => l.code === OUTPUT_TRUNCATED)).toBe(cut);
          expect(boundStoredOutput(once)).toEqual(once);
        },
      ),
      { numRuns: 60 },
    );
  });
});
