// The shared services product lanes use, built once per process.
import type { Logger } from 'pino';
import type { Config } from '../../config/config.ts';
import { createResolver } from '../../dns/stub-resolver.ts';
import { createOutboundGuard } from '../../net/outbound-guard.ts';
import type { ProductRuntime, ProductServices } from './product-contract.ts';

export function createProductRuntime(config: Config, log: Logger, extra: ProductServices = {}): ProductRuntime {
  const resolver = createResolver(config);
  // The one outbound guard of the process: every lane's HTTP, TCP and TLS goes through it.
  const outbound = createOutboundGuard({
    allow: config.ALLOW_PRIVATE_TARGETS,
    resolver,
    portMap: config.OUTBOUND_PORT_MAP,
  });
  return { config, log, services: { resolver, outbound, ...extra } };
}
