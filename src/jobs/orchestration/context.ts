// What every orchestration step needs. Built once by startOrchestrator; tests build their own.
import type { RedisClient } from '../../redis/client.ts';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.ts';
import type { Db } from '../../db/database.ts';
import type { QueueSettings } from '../../queue/queue-settings.ts';
import type { ProductCatalog } from './product-catalog.ts';

export interface OrchestrationContext {
  db: Db;
  redis: RedisClient;
  log: Logger;
  config: Config;
  settings: QueueSettings;
  catalog: ProductCatalog;
  /** The check's own timeout, for telling a dead runner from a slow one. */
  checkTimeoutMs(check: string): number;
  /**
   * Most finished tasks of one job settled in one transaction (a batch of results, a chunk of a
   * terminal transition's backlog); default DEFAULT_RESULT_BATCH.
   */
  resultBatch?: number;
}

/** Most finished tasks of one job applied in one transaction, unless the orchestrator says otherwise. */
export const DEFAULT_RESULT_BATCH = 256;

/** Used when a check is unknown to this process: the longest a check is expected to run. */
export const DEFAULT_CHECK_TIMEOUT_MS = 120_000;
