// The shared services product lanes use, built once per process.
import type { Logger } from 'pino';
import type { Config } from '../../config/config.ts';
import { createResolver } from '../../dns/stub-resolver.ts';
import { createOutboundGuard } from '../../net/outbound-guard.ts';
import { setNat64Prefixes } from '../../net/address-policy.ts';
import { specialUsePolicy } from '../../net/special-use.ts';
import { refuseSpecialUse } from '../../net/special-use-resolver.ts';
import { publicResolverCheck } from '../../net/public-resolver-check.ts';
import type { ProductRuntime, ProductServices } from './product-contract.ts';
import { ScopeProofs } from '../../auth/scope-proof.ts';

export function createProductRuntime(config: Config, log: Logger, extra: ProductServices = {}): ProductRuntime {
  // Special-use names never reach the resolver, and answers that lead into them are cut there:
  // either would describe our own network.
  const stub = createResolver(config);
  const resolver = refuseSpecialUse(stub, specialUsePolicy(config));
  // /readyz's warning when DNS_SERVERS answers what only a resolver with private zones answers.
  const publicResolver = publicResolverCheck(stub, {
    onChange: (warnings) => {
      if (warnings.length > 0) log.warn({ warnings }, 'DNS_SERVERS answers special-use names');
      else log.info('DNS_SERVERS no longer answers special-use names');
    },
  });
  // The one outbound guard of the process: every lane's HTTP, TCP and TLS goes through it.
  // The deployment's NAT64 prefixes: an address under one is judged by the IPv4 address it embeds.
  setNat64Prefixes(config.NAT64_PREFIXES);
  const outbound = createOutboundGuard({
    allow: config.ALLOW_PRIVATE_TARGETS,
    resolver,
    portMap: config.OUTBOUND_PORT_MAP,
    politeness: {
      connections: config.OUTBOUND_CONNECTIONS_PER_ADDRESS,
      intervalMs: config.OUTBOUND_ADDRESS_INTERVAL_MS,
      queueWaitMs: config.OUTBOUND_QUEUE_WAIT_MS,
    },
  });
  // Active work's guard: the same policy and the same politeness slots per address, and
  // ACTIVE_DENY_CIDRS refused whatever allows them.
  const activeOutbound = createOutboundGuard({
    allow: config.ALLOW_PRIVATE_TARGETS,
    deny: config.ACTIVE_DENY_CIDRS,
    resolver,
    portMap: config.OUTBOUND_PORT_MAP,
    ...(outbound.slots ? { slots: outbound.slots } : {}),
  });
  // Proofs ask the zone's own servers, reached through the passive guard like the mail zone check.
  const scopeProofs = new ScopeProofs(
    { resolver, servers: outbound },
    { cacheSeconds: config.SCOPE_PROOF_CACHE_SECONDS },
  );
  return { config, log, services: { resolver, outbound, activeOutbound, scopeProofs, publicResolver, ...extra } };
}
