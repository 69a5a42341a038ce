// The terminal decision of a job (src/jobs/orchestration/job-outcome.ts) for every async product,
// on task rows as finalize reads them: what the lanes measured is never dropped (CONTRACT §7, §9).
// A job is `unavailable` only when no lane produced a fact about the target; a required lane that
// failed on the target (refused, stalled, legacy TLS only, MX timed out) next to lanes that
// answered makes it `partial`, and its envelope carries `status` and every part that was measured.
import { describe, expect, it } from 'vitest';
import { decideOutcome, type OutcomeInput } from '../../src/jobs/orchestration/job-outcome.ts';
import type { TaskRow } from '../../src/jobs/tasks/task-rows.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { LaneStatus } from '../../src/contract/lanes.ts';
import { webProduct } from '../../src/products/web/index.ts';
import { mailProduct } from '../../src/products/mail/index.ts';
import { mailLaneList } from '../../src/products/mail/lanes.ts';
import { domainProduct } from '../../src/products/domain/index.ts';
import { scanProduct } from '../../src/products/scan/index.ts';
import type { ProductDefinition } from '../../src/products/kit/product-contract.ts';

let nextId = 1;
function task(
  productLane: string,
  status: LaneStatus,
  opts: { required?: boolean; reason?: string; projection?: Record<string, unknown>; measured?: boolean } = {},
): TaskRow {
  const output: CheckOutput | null =
    status === 'failed' && !opts.projection
      ? null
      : {
          status,
          ...(opts.reason ? { reason: opts.reason } : {}),
          projection: opts.projection ?? { lane: productLane },
          objects: [],
          relations: [],
          findings: [],
          limitations: [],
          sources: [],
          ...(opts.measured ? { measured: true } : {}),
        };
  return {
    id: nextId++,
    job_id: 1,
    check_name: `x.${productLane}`,
    object_key: 'k',
    lane: 'web',
    product_lane: productLane,
    required: opts.required ?? false,
    unit_cost: 1,
    status: status as TaskRow['status'],
    reason: opts.reason ?? null,
    output,
    applied_at: new Date(),
  };
}

function decide(def: ProductDefinition, input: unknown, tasks: TaskRow[], mode: OutcomeInput['mode'] = 'settle') {
  return decideOutcome({
    def: def as ProductDefinition,
    productId: def.id,
    input,
    requestId: 'req_test',
    tasks,
    mode,
    charged: 0,
  });
}

const WEB = { url: 'https://tls10.weblab.test/', authorized: true };

describe('web: a required http lane that failed on the target', () => {
  it('TLS 1.0 only: http measured the handshake failure, tls and tls_protocols completed → partial, everything kept', () => {
    const out = decide(webProduct, WEB, [
      task('http', 'unavailable', {
        required: true,
        reason: 'tls_failed',
        measured: true,
        projection: { chains: { https: { outcome: 'failed', failure: { kind: 'tls_failed' } } } },
      }),
      task('tls', 'completed', { projection: { protocol: 'TLSv1', certificate: { subject: 'CN=tls10' } } }),
      task('tls_protocols', 'completed', { projection: { addresses: [{ versions: { TLSv1: 'accepted' } }] } }),
    ]);
    expect(out.status).toBe('partial');
    const env = out.result as any;
    expect(env.status).toBe('partial');
    expect(env.result.tls).toMatchObject({ protocol: 'TLSv1', certificate: { subject: 'CN=tls10' } });
    expect(env.result.tlsProtocols.addresses).toHaveLength(1);
    // The failing lane says why, and its part says what the target did.
    expect(env.result.http.chains.https.failure.kind).toBe('tls_failed');
    expect(env.lanes.find((l: any) => l.lane === 'http')).toMatchObject({
      status: 'unavailable',
      reason: 'tls_failed',
    });
    expect(out.coverage.complete).toBe(false);
  });

  it('a server that accepts and then stalls: every lane timed out, http measured the stall → partial', () => {
    const out = decide(webProduct, { url: 'https://silent.weblab.test/', authorized: false }, [
      task('http', 'timeout', { required: true, reason: 'http_timeout', measured: true }),
      task('tls', 'timeout', { reason: 'tls_timeout' }),
    ]);
    expect(out.status).toBe('partial');
    expect((out.result as any).status).toBe('partial');
    expect((out.result as any).result.http).toEqual({ lane: 'http' });
    expect((out.result as any).result.tls).toBeNull();
  });

  it('no lane produced a fact (our guard refused, the resolver failed): unavailable, with status and nulls', () => {
    const out = decide(webProduct, { url: 'https://strict.weblab.test/', authorized: false }, [
      task('http', 'unavailable', { required: true, reason: 'target_not_allowed' }),
      task('tls', 'unavailable', { reason: 'target_not_allowed' }),
    ]);
    expect(out.status).toBe('unavailable');
    const env = out.result as any;
    expect(env.status).toBe('unavailable');
    expect(env.result).toMatchObject({ http: null, tls: null, tlsProtocols: null });
    expect(env.lanes.map((l: any) => l.status)).toEqual(['unavailable', 'unavailable', 'skipped']);
  });

  it('a deadline with a measured lane is partial, without any is failed; the envelope says which', () => {
    const measured = decide(
      webProduct,
      { url: 'https://silent.weblab.test/', authorized: false },
      [task('http', 'timeout', { required: true, measured: true }), task('tls', 'cancelled')],
      'deadline',
    );
    expect([measured.status, (measured.result as any).status]).toEqual(['partial', 'partial']);
    const nothing = decide(
      webProduct,
      { url: 'https://silent.weblab.test/', authorized: false },
      [task('http', 'cancelled', { required: true }), task('tls', 'cancelled')],
      'deadline',
    );
    expect([nothing.status, (nothing.result as any).status]).toEqual(['failed', 'failed']);
  });
});

describe('mail: the MX question timed out or got SERVFAIL', () => {
  // The lanes that need the MX hosts (smtp_starttls, dane, mta_sts) end as the MX did; SPF and
  // DMARC ask their own questions.
  const lanes = (mx: LaneStatus, own: LaneStatus) =>
    mailLaneList.map((l) => task(l.lane, l.lane === 'spf' || l.lane === 'dmarc' ? own : mx, { required: l.required }));

  it('the other lanes answered: partial, their parts stay in the envelope, mx is null with its reason', () => {
    const out = decide(mailProduct, { value: 'mx-timeout.test' }, lanes('timeout', 'completed'));
    expect(out.status).toBe('partial');
    const env = out.result as any;
    expect(env.status).toBe('partial');
    expect(env.result.mx).toBeNull();
    expect(env.result.spf).toEqual({ lane: 'spf' });
    expect(env.result.dmarc).toEqual({ lane: 'dmarc' });
    expect(env.limitations.map((l: any) => l.code)).toContain('mx_timeout');
  });

  it('every lane failed: unavailable (no fact about the target), the envelope still has status', () => {
    const out = decide(mailProduct, { value: 'mail-silent.test' }, lanes('timeout', 'timeout'));
    expect(out.status).toBe('unavailable');
    expect((out.result as any).status).toBe('unavailable');
    expect((out.result as any).result.spf).toBeNull();
  });
});

describe('domain: the delegation (required) is unknown', () => {
  it('registration answered: partial with the registration kept', () => {
    const out = decide(domainProduct, { value: 'lab-servfail.test' }, [
      task('dns_delegation', 'unavailable', { required: true, reason: 'servfail' }),
      task('registration', 'completed', { projection: { registrar: 'Lab Registrar' } }),
      task('dns_records', 'unavailable', { reason: 'servfail' }),
    ]);
    expect(out.status).toBe('partial');
    const env = out.result as any;
    expect(env.status).toBe('partial');
    expect(env.result).toMatchObject({ delegation: null, registration: { registrar: 'Lab Registrar' }, records: null });
  });

  it('nothing answered: unavailable', () => {
    const out = decide(domainProduct, { value: 'lab-timeout.test' }, [
      task('dns_delegation', 'timeout', { required: true }),
      task('registration', 'timeout'),
      task('dns_records', 'timeout'),
    ]);
    expect(out.status).toBe('unavailable');
    expect((out.result as any).status).toBe('unavailable');
  });
});

describe('scans: the target DNS task (required) failed', () => {
  const SCAN = {
    profile: 'quick',
    target: { type: 'domain_name', value: 'x.test' },
    options: { active: false, maxCredits: 10 },
  };
  const scanTask = (lane: string, status: LaneStatus, required = false) => ({
    ...task(lane, status, { required }),
    output: null,
  });

  it('the target mail posture answered: partial', () => {
    const out = decide(scanProduct, SCAN, [scanTask('dns', 'timeout', true), scanTask('mail', 'partial')]);
    expect(out.status).toBe('partial');
  });

  it('nothing answered: unavailable', () => {
    const out = decide(scanProduct, SCAN, [scanTask('dns', 'unavailable', true), scanTask('mail', 'timeout')]);
    expect(out.status).toBe('unavailable');
  });
});
