// The resolver every product check uses, behind the special-use rule (./special-use.ts): a
// question about a special-use name, a non-global reverse zone or an unlisted TLD is answered here,
// without a packet leaving the process, with outcome `error` (indeterminate: nothing is known, so
// no check can read it as an absence) and `notAsked` saying why. kit/runtime.ts wraps the
// process's resolver with it, so MX, NS, CNAME and SPF names a target points at, and the outbound
// guard's own host lookups, never reach the local resolver for such names.
import type { QueryResult, RecordType, Resolver } from '../dns/types.ts';
import { specialUseOf, type SpecialUsePolicy } from './special-use.ts';

export function refuseSpecialUse(resolver: Resolver, policy: SpecialUsePolicy): Resolver {
  return {
    readiness: () => resolver.readiness(),
    retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
    query(name: string, type: RecordType, opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<QueryResult> {
      const refused = specialUseOf(name, policy);
      if (!refused) return resolver.query(name, type, opts);
      opts?.signal?.throwIfAborted();
      return Promise.resolve({
        name: name.length > 1 && name.endsWith('.') ? name.slice(0, -1) : name,
        type,
        outcome: 'error',
        rcode: null,
        answers: [],
        flags: { aa: false, ad: false, tc: false, ra: false },
        transport: null,
        durationMs: 0,
        notAsked: `${refused.reason}: ${refused.suffix}`,
      });
    },
  };
}
