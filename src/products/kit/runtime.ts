// The shared services product lanes use, built once per process.
import type { Logger } from 'pino';
import type { Config } from '../../config/config.ts';
import { createResolver } from '../../dns/stub-resolver.ts';
import { createOutboundGuard } from '../../net/outbound-guard.ts';
import { specialUsePolicy } from '../../net/special-use.ts';
import { refuseSpecialUse } from '../../net/special-use-resolver.ts';
import type { ProductRuntime, ProductServices } from './product-contract.ts';

export function createProductRuntime(config: Config, log: Logger, extra: ProductServices = {}): ProductRuntime {
  // Special-use names never reach the resolver: any answer would describe our own network.
  const resolver = refuseSpecialUse(createResolver(config), specialUsePolicy(config));
  // The one outbound guard of the process: every lane's HTTP, TCP and TLS goes through it.
  const outbound = createOutboundGuard({
    allow: config.ALLOW_PRIVATE_TARGETS,
    resolver,
    portMap: config.OUTBOUND_PORT_MAP,
    politeness: {
      connections: config.OUTBOUND_CONNECTIONS_PER_ADDRESS,
      intervalMs: config.OUTBOUND_ADDRESS_INTERVAL_MS,
    },
  });
  return { config, log, services: { resolver, outbound, ...extra } };
}
