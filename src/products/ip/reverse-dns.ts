// The reverse_dns lane: one PTR question through the project resolver. Only an authoritative
// answer (records, NXDOMAIN or NODATA) is an answer; anything else leaves ptr null.
import type { QueryResult, Resolver } from '../../dns/types.ts';
import type { LaneStatus, Limitation } from '../../contract/lanes.ts';

export interface ReverseOutcome {
  status: LaneStatus;
  reason?: string;
  name: string;
  ptr: string[] | null;
  limitations: Limitation[];
}

function unavailable(name: string, status: LaneStatus, reason: string, detail: string): ReverseOutcome {
  return {
    status,
    reason,
    name,
    ptr: null,
    limitations: [
      {
        code: 'reverse_dns_unavailable',
        message: `No PTR answer for ${name}: ${detail}. This says nothing about whether a PTR record exists.`,
      },
    ],
  };
}

function ptrNames(result: QueryResult): string[] {
  const names = result.answers
    .filter((r) => r.type === 'PTR' && typeof r.data === 'string')
    .map((r) => (r.data as string).replace(/\.$/, '').toLowerCase());
  return [...new Set(names)];
}

export async function reverseLookup(
  resolver: Resolver | undefined,
  name: string,
  signal: AbortSignal,
): Promise<ReverseOutcome> {
  if (!resolver)
    return unavailable(
      name,
      'unavailable',
      'resolver_not_configured',
      'no DNS resolver is configured for this service',
    );
  let result: QueryResult;
  try {
    result = await resolver.query(name, 'PTR', { signal });
  } catch (err) {
    if (signal.aborted) return unavailable(name, 'cancelled', 'cancelled', 'the request was cancelled');
    return unavailable(name, 'unavailable', 'error', `the resolver failed (${(err as Error).message})`);
  }
  switch (result.outcome) {
    case 'answer': {
      const ptr = ptrNames(result);
      const limitations: Limitation[] = [];
      if (ptr.length === 0) {
        limitations.push({
          code: 'reverse_dns_no_ptr_in_answer',
          message: `The answer for ${name} held no PTR record (an alias chain without a PTR at its end).`,
        });
      }
      return { status: 'completed', name, ptr, limitations };
    }
    case 'nxdomain':
    case 'nodata':
      // An authoritative "no such name" / "no PTR at this name" is the answer: there is no PTR.
      return { status: 'completed', name, ptr: [], limitations: [] };
    case 'timeout':
      return unavailable(name, 'timeout', 'timeout', 'the resolver did not answer in time');
    case 'left_public_dns':
      // What a resolver with private zones says beyond that point is not ours to report.
      return unavailable(
        name,
        'unavailable',
        'left_public_dns',
        `the answer left public DNS after ${result.leftPublicDns?.name ?? name} and was cut there`,
      );
    case 'servfail':
    case 'refused':
    case 'formerr':
    case 'notimp':
      return unavailable(
        name,
        'failed',
        result.outcome,
        `the resolver answered ${result.rcode ?? result.outcome.toUpperCase()}`,
      );
    default:
      return unavailable(
        name,
        'unavailable',
        result.outcome,
        'the resolver could not be reached or its reply was unusable',
      );
  }
}
