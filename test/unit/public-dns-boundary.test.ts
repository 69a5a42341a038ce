// Answers that leave public DNS are cut there (issue 30 item 3). The lab DNS serves, beside its
// public zones, the private zones a cluster's or a company's resolver holds (test/lab/private-
// zones.ts: cluster.local, corp.internal, a private reverse zone, localhost) and chases CNAMEs into
// them like such a resolver. Public lab names point in. Before, the refusal looked at the question
// only: `k8s.leak.lab.test A` came back with the cluster's name and address, the reverse name of
// 127.0.0.77 with a private host name. Now the chain is cut where it enters such a name (the record
// that points in and all after it), the outcome is `left_public_dns` when nothing of the asked type
// is left, and every check that met a cut carries the limitation `answer_leaves_public_dns`.
// Nothing only the private zones hold may appear in any output.
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryResult, RecordType } from '../../src/dns/types.ts';
import { createResolver } from '../../src/dns/stub-resolver.ts';
import { publicResolverCheck } from '../../src/net/public-resolver-check.ts';
import {
  answerCutLimitation,
  collectAnswerCuts,
  cutAtPublicBoundary,
  notingCuts,
} from '../../src/net/special-use-resolver.ts';
import { AnswerCache } from '../../src/dns/answer-cache.ts';
import { specialUseOf } from '../../src/net/special-use.ts';
import type { ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { createScanChecks } from '../../src/products/scan/checks/index.ts';
import { createWebChecks } from '../../src/products/web/checks.ts';
import { executeCheck } from '../../workers/lane-runner/execute-check.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';
import { runtimeFor } from '../helpers/lab-runtime.ts';
import { LEAK, PRIVATE_ONLY, PUBLISHED_PRIVATE_ADDRESS } from '../lab/private-zones.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { reverseName } from '../lab/zones.ts';

const TYPES: RecordType[] = ['A', 'AAAA', 'CNAME', 'MX', 'TXT'];
const expectNothingPrivate = (what: unknown, label: string) => {
  const text = JSON.stringify(what);
  for (const secret of Object.values(PRIVATE_ONLY)) expect(text, `${label} holds ${secret}`).not.toContain(secret);
  expect(text, label).not.toContain('cluster.local');
  expect(text, label).not.toContain('corp.internal');
};

let lab: RunningLab;
let rt: ProductRuntime;
const q = (name: string, type: RecordType) => rt.services.resolver!.query(name, type);

beforeAll(async () => {
  lab = await startLab({ parts: [] });
  rt = runtimeFor(lab.env);
}, 60_000);
afterAll(async () => {
  await lab?.close();
});

describe('the resolver cuts a chain where it leaves public DNS', () => {
  it('a CNAME into cluster.local: nothing of the cluster comes back; the outcome says why', async () => {
    for (const type of TYPES) {
      const r = await q(LEAK.k8s, type);
      expectNothingPrivate(r, `${type} ${LEAK.k8s}`);
      expect(r.outcome, type).toBe('left_public_dns');
      expect(r.answers, type).toEqual([]);
      expect(r.leftPublicDns).toEqual({ name: LEAK.k8s, why: 'a special-use domain' });
    }
  });

  it('the public links before the exit are kept; nothing after it, not even a public name it leads back to', async () => {
    const via = await q(LEAK.via, 'A');
    expectNothingPrivate(via, LEAK.via);
    expect(via.answers.map((a) => [a.name, a.type, a.data])).toEqual([[LEAK.via, 'CNAME', LEAK.k8s]]);
    expect(via).toMatchObject({ outcome: 'left_public_dns', leftPublicDns: { name: LEAK.k8s } });
    const back = await q(LEAK.back, 'A');
    expectNothingPrivate(back, LEAK.back);
    expect(back.answers).toEqual([]); // lab.test's own A (reached through corp.internal) is not kept
    expect(back.outcome).toBe('left_public_dns');
  });

  it('reverse names: a CNAME into a non-global reverse zone, a PTR naming a private host', async () => {
    for (const ip of [LEAK.ptrIntoPrivateZone, LEAK.ptrNamingPrivateHost]) {
      const r = await q(reverseName(ip), 'PTR');
      expectNothingPrivate(r, ip);
      expect(r.outcome, ip).toBe('left_public_dns');
    }
    expect((await q(reverseName(LEAK.ptrIntoPrivateZone), 'PTR')).leftPublicDns?.why).toBe(
      'the reverse zone of a range that is not globally reachable',
    );
  });

  it('a private address published in a public zone is a public fact: kept (the outbound guard refuses it)', async () => {
    const r = await q(LEAK.privateAddress, 'A');
    expect(r.outcome).toBe('answer');
    expect(r.answers.map((a) => a.data)).toEqual([PUBLISHED_PRIVATE_ADDRESS]);
    expect(r.leftPublicDns).toBeUndefined();
    // An ordinary public chain is untouched.
    expect((await q('www.lab.test', 'A')).answers.map((a) => a.type)).toEqual(['CNAME', 'A']);
  });

  it('the cuts of one piece of work are collected, and its limitation names only public names', async () => {
    const { cuts } = await collectAnswerCuts(async () => {
      await q(LEAK.via, 'A');
      await q('lab.test', 'A');
      await q(reverseName(LEAK.ptrNamingPrivateHost), 'PTR');
    });
    expect(cuts.map((c) => c.from)).toEqual([LEAK.k8s, reverseName(LEAK.ptrNamingPrivateHost).replace(/\.$/, '')]);
    const limitation = answerCutLimitation(cuts)!;
    expect(limitation.code).toBe('answer_leaves_public_dns');
    expect(limitation.message).toContain(LEAK.k8s);
    expectNothingPrivate(limitation, 'limitation');
    // Outside any collection nothing is gathered, and nothing leaks between pieces of work.
    const other = await collectAnswerCuts(() => q('lab.test', 'A'));
    expect(other.cuts).toEqual([]);
  });

  it("through a job's answer cache: a reply shared with another check, or served again, still notes its cut there", async () => {
    const cache = new AnswerCache({ maxEntries: 100, maxTtlS: 300, negativeTtlS: 60 });
    const scoped = notingCuts(cache.scoped('ws:job', rt.services.resolver!));
    // Two checks of one job asking at once share one query: the cut happened in the first's work.
    const [a, b] = await Promise.all([
      collectAnswerCuts(() => scoped.query(LEAK.via, 'A')),
      collectAnswerCuts(() => scoped.query(LEAK.via, 'A')),
    ]);
    expect(a.cuts.map((c) => c.from)).toEqual([LEAK.k8s]);
    expect(b.cuts.map((c) => c.from)).toEqual([LEAK.k8s]);
    expect(cache.misses).toBe(1);
  });
});

describe('every check that met a cut says so, and reports nothing beyond it', () => {
  const log = pino({ level: 'silent' });
  const task = (check: string, objectKey: string, params: Record<string, unknown>): LaneTask => ({
    id: 1,
    jobId: 1,
    workspaceId: 1,
    objectKey,
    check,
    lane: 'dns',
    productLane: 'dns',
    distance: 1,
    params,
    status: 'running',
    attempts: 1,
    jobStatus: 'running',
    target: objectKey,
  });

  it("a scan's dns check of an alias into cluster.local", async () => {
    const spec = createScanChecks().find((c) => c.name === 'scan.dns')!;
    const r = await executeCheck(
      spec,
      task(spec.name, LEAK.via, { target: LEAK.zone, scope: 'lab.test', sourceCap: 50 }),
      { runtime: rt },
      new AbortController().signal,
      log,
    );
    expect(r.kind).toBe('done');
    const out = r.kind === 'done' ? r.output! : null;
    expectNothingPrivate(out, 'scan.dns');
    expect(out!.limitations.map((l) => l.code)).toContain('answer_leaves_public_dns');
    expect(out!.objects.map((o) => o.key)).not.toContain(PRIVATE_ONLY.k8sAddress);
  });

  it("a web lookup's http check of a host whose address lies beyond the exit", async () => {
    const spec = createWebChecks({ fetchTimeoutMs: 3000 }).find((c) => c.name === 'web.http')!;
    const r = await executeCheck(
      spec,
      task(spec.name, `https://${LEAK.k8s}/`, { url: `https://${LEAK.k8s}/` }),
      { runtime: rt },
      new AbortController().signal,
      log,
    );
    const out = r.kind === 'done' ? r.output! : null;
    expectNothingPrivate(out, 'web.http');
    expect(out!.limitations.map((l) => l.code)).toContain('answer_leaves_public_dns');
    expect(out!.status).not.toBe('completed');
  });
});

describe('cutAtPublicBoundary on any chain', () => {
  const policy = { allowSuffixes: ['test'], allowCidrs: [] };
  const names = ['a.pub.test', 'b.pub.test', 'c.pub.test', 'x.svc.cluster.local', 'y.corp.internal', 'z.home.arpa'];
  const record = fc.record({
    owner: fc.constantFrom(...names),
    type: fc.constantFrom('CNAME', 'A', 'PTR'),
    target: fc.constantFrom(...names),
  });

  it('keeps only records reachable from the question through public names, none owned by or naming a special-use one', () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 30 }), fc.constantFrom('A', 'PTR'), (recs, type) => {
        const r: QueryResult = {
          name: 'a.pub.test',
          type: type as RecordType,
          outcome: 'answer',
          rcode: 'NOERROR',
          answers: recs.map((x) => ({
            name: x.owner,
            type: x.type,
            ttl: 60,
            data: x.type === 'A' ? '127.0.0.1' : x.target,
          })),
          flags: { aa: false, ad: false, tc: false, ra: true },
          transport: 'udp',
          durationMs: 1,
        };
        const { result, cut } = cutAtPublicBoundary(r, policy);
        const reachable = new Set(['a.pub.test']);
        for (let grew = true; grew; ) {
          grew = false;
          for (const a of result.answers)
            if (a.type === 'CNAME' && reachable.has(a.name) && !reachable.has(String(a.data))) {
              reachable.add(String(a.data));
              grew = true;
            }
        }
        for (const a of result.answers) {
          expect(specialUseOf(a.name, policy)).toBeNull();
          if (a.type !== 'A') expect(specialUseOf(String(a.data), policy)).toBeNull();
          expect(reachable.has(a.name)).toBe(true);
        }
        // The outcome changes only with a cut, and then whenever nothing of the asked type is left.
        if (!cut) expect(result.outcome).toBe('answer');
        else {
          expect(result.leftPublicDns?.name).toBe(cut.from);
          expect(result.outcome).toBe(result.answers.some((a) => a.type === type) ? 'answer' : 'left_public_dns');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('/readyz: a resolver that answers special-use names is a warning', () => {
  it('the lab DNS answers localhost and cluster.local: the check says so, naming only its fixed names', async () => {
    const stub = createResolver(rt.config);
    try {
      const warnings = await publicResolverCheck(stub).probe();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.names).toEqual(['localhost', 'kubernetes.default.svc.cluster.local']);
      expect(JSON.stringify(warnings)).not.toContain(PRIVATE_ONLY.k8sAddress);
    } finally {
      stub.close?.();
    }
  });
});
