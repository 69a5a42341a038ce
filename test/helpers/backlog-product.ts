// A job product for tests of a large backlog of finished tasks (test/integration/finalize-backlog
// and the child process it runs): planning is done by the test itself (task rows written
// directly), so the product only has to be known to the orchestration catalog. The outputs are
// large (about 19 KB of JSON each, the size a mail or web task reaches) so that holding a few
// thousand of them at once is what an orchestrator's heap cannot afford.
import { pino } from 'pino';
import { z } from 'zod';
import type { Config } from '../../src/config/config.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { Db } from '../../src/db/database.ts';
import type { OrchestrationContext } from '../../src/jobs/orchestration/context.ts';
import { productCatalog } from '../../src/jobs/orchestration/product-catalog.ts';
import type { ProductDefinition } from '../../src/products/kit/product-contract.ts';
import { parseQueueSettings } from '../../src/queue/queue-settings.ts';
import type { RedisClient } from '../../src/redis/client.ts';

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

/** An orchestrator's context knowing only the backlog product `productId` (silent logs). */
export function backlogContext(o: {
  db: Db;
  redis: RedisClient;
  config: Config;
  productId: string;
}): OrchestrationContext {
  return {
    db: o.db,
    redis: o.redis,
    log: pino({ level: 'silent' }),
    config: o.config,
    settings: parseQueueSettings(process.env),
    catalog: productCatalog([backlogProduct(o.productId)]),
    checkTimeoutMs: () => 30_000,
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
