// A lane check's DNS questions that were never sent are asked again (issue 48, DESIGN.md
// "Congestion is ours, silence is the target's"). The stub resolver gives a question back unasked
// when its name or zone is backed off (`zoneBackoff`) or when it waited DNS_QUEUE_WAIT_MS behind a
// full congestion window (`congested`), with `retryAfterMs`: how long until asking may be worth it.
// A check that took such an answer as it is would report the question `timeout`, the target's
// silence, although nothing was asked. (A question a zone that rate-limits dropped was asked: the
// stub resolver itself sends it again behind the zone's cut window.) So here, within the check's
// own signal (its timeout):
//   - such a question is asked again after its `retryAfterMs` (at most `maxWaitMs`), at most
//     `retries` times (DNS_NOT_ASKED_RETRIES) and only while the check's deadline leaves time for
//     it (a retry must never become the check's own timeout), each one counted (`retried`);
//   - one still congested after that is our shortage, not the target's fact: it is noted as a
//     local failure (src/net/local-failures.ts), so the lane gives the task back instead of
//     recording it, as for EMFILE (workers/lane-runner/execute-check.ts);
//   - one still backed off keeps its `timeout` / `zoneBackoff` answer: the zone was asked (its
//     trial questions timed out) and its limitation says the name itself was not.
// A SERVFAIL marked `busyServfail` (its zone gave real answers to other questions of late: through
// a recursive resolver, the zone's rate limiting) was asked and answered, but says nothing of the
// name: after a pause that doubles (`servfailPauseMs`, ±50 %) it is asked again when the zone's
// SERVFAILs are a burst (Resolver.servfailBurst: several names failed, as a rate-limited resolver
// fails them; one name broken on its own stands after the first pause), at most `servfailRetries`
// times (DNS_SERVFAIL_RETRIES), under the same deadline rule; one that still SERVFAILs stands,
// indeterminate. A scan through a resolver in front of a zone that rate-limits
// otherwise loses every subtree under a name whose A question came back SERVFAIL (issue 48).
// The runner adds the `dns_questions_retried` limitation to the check's output when any question
// was retried, so the job's coverage counts the tasks that needed it.
import { setTimeout as sleep } from 'node:timers/promises';
import type { QueryOptions, QueryResult, RecordType, Resolver } from '../../src/dns/types.ts';
import type { Limitation } from '../../src/contract/lanes.ts';
import { noteLocalFailure } from '../../src/net/local-failures.ts';

export interface NotAskedRetryOptions {
  retries: number;
  /** Times a `busyServfail` answer is asked again (default 0), the first after `servfailPauseMs` (default 1000). */
  servfailRetries?: number;
  servfailPauseMs?: number;
  /** The longest wait before a retry, whatever the answer says (default 15 s). */
  maxWaitMs?: number;
  /**
   * The check's deadline (performance.now() ms) and the time a retried question needs before it
   * (`reserveMs`): no retry is waited for that would leave less, so a retry never turns into the
   * check's own timeout.
   */
  deadlineAt?: number;
  reserveMs?: number;
  /** Called once per retry (a metric). */
  onRetry?: (why: 'zone_backoff' | 'congestion' | 'servfail') => void;
}

/** The local failure code a question still congested after its retries leaves in the check. */
export const DNS_NOT_ASKED = 'DNS_NOT_ASKED';

export interface RetryTally {
  retried: number;
}

/** `resolver` with its never-sent questions asked again; `tally` counts the retries. */
export function retryingNotAsked(resolver: Resolver, o: NotAskedRetryOptions, tally: RetryTally): Resolver {
  const maxWait = o.maxWaitMs ?? 15_000;
  return {
    ...resolver,
    readiness: () => resolver.readiness(),
    retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
    servfailBurst: (zone) => resolver.servfailBurst?.(zone) ?? false,
    async query(name: string, type: RecordType, opts?: QueryOptions): Promise<QueryResult> {
      let r = await resolver.query(name, type, opts);
      let notAsked = 0;
      let servfails = 0;
      for (;;) {
        let wait: number;
        if (r.retryAfterMs !== undefined && notAsked < o.retries) {
          notAsked++;
          // (A few ms past the wait: a timer may fire a hair before the backoff's own clock says it is over.)
          wait = Math.min(maxWait, Math.max(0, r.retryAfterMs) + 5);
        } else if (r.busyServfail !== undefined && servfails < (o.servfailRetries ?? 0)) {
          wait = Math.min(maxWait, (o.servfailPauseMs ?? 1000) * 2 ** servfails * (0.5 + Math.random()));
          servfails++;
        } else break;
        if (o.deadlineAt !== undefined && performance.now() + wait + (o.reserveMs ?? 0) > o.deadlineAt) break;
        await sleep(wait, undefined, opts?.signal ? { signal: opts.signal } : {});
        // A SERVFAIL alone in its zone after the pause: the name is broken, not the zone busy.
        if (r.busyServfail !== undefined && !(resolver.servfailBurst?.(r.busyServfail) ?? false)) break;
        tally.retried++;
        o.onRetry?.(r.busyServfail !== undefined ? 'servfail' : r.congested ? 'congestion' : 'zone_backoff');
        r = await resolver.query(name, type, opts);
      }
      if (r.congested) noteLocalFailure(DNS_NOT_ASKED);
      return r;
    },
  };
}

/** The limitation a check whose questions needed retries carries (null when none did). */
export function retriedLimitation(tally: RetryTally): Limitation | null {
  if (tally.retried === 0) return null;
  return {
    code: 'dns_questions_retried',
    message: `${tally.retried} DNS question${tally.retried === 1 ? ' was' : 's were'} asked again after a wait: not sent at first (its zone backed off, or our own congestion window full), or answered SERVFAIL while its zone answered others (a resolver in front of a zone that rate-limits).`,
  };
}
