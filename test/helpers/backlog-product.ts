// A job product for tests of a large backlog of finished tasks (test/integration/finalize-backlog
// and the child process it runs): planning is done by the test itself (task rows written
// directly), so the product only has to be known to the orchestration catalog. The outputs are
// large (about 19 KB of JSON each, the size a mail or web task reaches) so that holding a few
// thousand of them at once is what an orchestrator's heap cannot afford.
import { z } from 'zod';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { ProductDefinition } from '../../src/products/kit/product-contract.ts';

export function backlogProduct(id: string): ProductDefinition {
  return {
    id,
    title: 'backlog test product',
    mode: 'async',
    method: 'POST',
    path: `/v2/test/${id}`,
    scope: 'scan:create',
    rateClass: 'scan',
    input: z.any(),
    lanes: [{ lane: 'probe', required: false, description: 'test lane' }],
    price: () => 0,
    readiness: () => ({ probe: 'ready' }),
    job: {
      workerLanes: ['dns'],
      target: () => ({ type: 'domain_name', value: 'example.test' }),
      plan: () => [],
      deadlineMs: 600_000,
    },
  };
}

/** A completed task's output of about 19 KB: one host object whose projection holds 60 records. */
export function bigOutput(key: string): CheckOutput {
  const records = Array.from({ length: 60 }, (_, i) => ({
    name: `r${i}.${key}`,
    type: 'TXT',
    ttl: 300,
    value: `v=lab${i} ${'x'.repeat(96)}`,
  }));
  return {
    status: 'completed',
    projection: { records },
    objects: [{ type: 'host', key, projection: { name: key, records }, evidence: [{ summary: `probed ${key}` }] }],
    relations: [],
    findings: [],
    limitations: [],
    sources: [{ source: 'test_probe' }],
  };
}
