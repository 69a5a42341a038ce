// Does the configured resolver (DNS_SERVERS) answer names that only a resolver with private zones
// answers? The service needs a public recursive resolver with no private zones (docs/operations.md,
// "DNS_SERVERS"): every chain into such a zone is cut (./special-use-resolver.ts), but a resolver
// that overrides public names (a private zone named like a public one, local-data, rewrite rules)
// cannot be told from public DNS by its answers. What can be seen is a resolver that answers
// `localhost` or a well-known special-use name: /readyz reports it as a warning (ready all the
// same), and the process logs it once each time it appears or goes.
//
// The questions go to the resolver itself, not through the special-use rule (which would refuse
// them): a few fixed names, at most once per interval, in the background of the call that found
// the last answer stale, so /readyz never waits on them. The warning names only these fixed names,
// never what the resolver answered (/readyz is on the public port).
import type { RecordType, Resolver } from '../dns/types.ts';

const PROBES: ReadonlyArray<{ name: string; type: RecordType }> = [
  { name: 'localhost', type: 'A' },
  { name: 'kubernetes.default.svc.cluster.local', type: 'A' },
  { name: 'metadata.google.internal', type: 'A' },
];

export interface ResolverWarning {
  code: 'dns_servers_answer_special_use_names';
  message: string;
  names: string[];
}

export interface PublicResolverCheck {
  /** The warnings of the latest probe ([] before the first one ends); starts a probe when stale. */
  warnings(): ResolverWarning[];
  /** Runs a probe now and resolves with its warnings (tests, and the first call at start). */
  probe(): Promise<ResolverWarning[]>;
}

export function publicResolverCheck(
  resolver: Resolver,
  opts: { intervalMs?: number; onChange?: (warnings: ResolverWarning[]) => void } = {},
): PublicResolverCheck {
  const intervalMs = opts.intervalMs ?? 10 * 60_000;
  let last: ResolverWarning[] = [];
  let checkedAt = Number.NEGATIVE_INFINITY;
  let running: Promise<ResolverWarning[]> | null = null;
  const probe = (): Promise<ResolverWarning[]> => {
    running ??= (async () => {
      const results = await Promise.all(PROBES.map((p) => resolver.query(p.name, p.type).catch(() => null)));
      const names = PROBES.filter((_, i) => results[i]?.outcome === 'answer').map((p) => p.name);
      const next: ResolverWarning[] =
        names.length === 0
          ? []
          : [
              {
                code: 'dns_servers_answer_special_use_names',
                message: `DNS_SERVERS answers ${names.join(', ')}: it holds local or private zones. Use a public recursive resolver with no private zones (docs/operations.md, DNS_SERVERS); answers that lead into such zones are cut, but a private zone that overrides a public name cannot be detected.`,
                names,
              },
            ];
      if (JSON.stringify(next) !== JSON.stringify(last)) opts.onChange?.(next);
      last = next;
      checkedAt = performance.now();
      return next;
    })().finally(() => {
      running = null;
    });
    return running;
  };
  return {
    warnings() {
      if (!running && performance.now() - checkedAt > intervalMs) void probe().catch(() => {});
      return last;
    },
    probe,
  };
}
