// The shared services product lanes use, built once per process.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { ProductRuntime } from './types.ts';
import { createResolver } from '../dns/stub-resolver.ts';

export function createProductRuntime(config: Config, log: Logger, extra: Record<string, unknown> = {}): ProductRuntime {
  return { config, log, services: { resolver: createResolver(config), ...extra } };
}
