// The contract of the project's stub resolver, used by every lane that asks DNS a question.
export const recordTypes = [
  'A',
  'AAAA',
  'CNAME',
  'MX',
  'NS',
  'TXT',
  'CAA',
  'SOA',
  'PTR',
  'DS',
  'DNSKEY',
  'SRV',
  'TLSA',
] as const;
export type RecordType = (typeof recordTypes)[number];

/**
 * answer   NOERROR with records of the asked type (or a CNAME chain)
 * nodata   NOERROR, no records of that type (authoritative absence of the type)
 * nxdomain the name does not exist (authoritative absence of the name)
 * servfail / refused / formerr / notimp  the server's rcode
 * timeout  no usable reply within the deadline from any server (or, with `zoneBackoff`, not asked:
 *          the name's zone kept timing out of late, ./zone-backoff.ts); the target's fact, never
 *          the resolver's
 * error    network or protocol failure (malformed, mismatched replies…)
 * left_public_dns  the reply's chain went into a name only a local resolver answers (a special-use
 *          name or a non-global reverse zone: src/net/special-use-resolver.ts) and was cut there;
 *          nothing is known of the type beyond (indeterminate), `leftPublicDns` says where
 */
export const QUERY_OUTCOMES = [
  'answer',
  'nodata',
  'nxdomain',
  'servfail',
  'refused',
  'formerr',
  'notimp',
  'timeout',
  'error',
  'left_public_dns',
] as const;
export type QueryOutcome = (typeof QUERY_OUTCOMES)[number];

export interface DnsRecord {
  name: string;
  type: string;
  ttl: number;
  /** Presentation-friendly data: string for A/AAAA/CNAME/NS/PTR, objects for MX/SOA/CAA/SRV…, string[] for TXT. */
  data: unknown;
}

export interface QueryResult {
  name: string;
  type: RecordType;
  outcome: QueryOutcome;
  /** The rcode mnemonic when a reply arrived (NOERROR, NXDOMAIN…), else null. */
  rcode: string | null;
  answers: DnsRecord[];
  flags: { aa: boolean; ad: boolean; tc: boolean; ra: boolean };
  transport: 'udp' | 'tcp' | null;
  durationMs: number;
  /** Set when the question was never sent because policy forbids it (src/net/special-use.ts); outcome is 'error'. */
  notAsked?: string;
  /**
   * Set when the question was not sent because the name or its zone (named here) is backed off
   * after repeated timeouts (src/dns/zone-backoff.ts); outcome is 'timeout'.
   */
  zoneBackoff?: string;
  /**
   * Set when the question was never sent because it waited longer than the queue wait
   * (DNS_QUEUE_WAIT_MS) behind the congestion window of the zone named here (src/dns/congestion.ts);
   * outcome is 'error'. Our own congestion, never the target's fact.
   */
  congested?: string;
  /**
   * Set on a timeout when the question's zone (named here) answered other questions each time it
   * was sent: dropped by a zone that rate-limits (src/dns/congestion.ts), not its silence; the stub
   * resolver sent it again behind the zone's cut window before giving up.
   */
  rateLimited?: string;
  /**
   * Set on a SERVFAIL when the question's zone (named here) gave real answers to other questions
   * within the last 10 s: through a recursive resolver, what the zone's rate limiting looks like
   * (the resolver's own questions were dropped). Still indeterminate; a lane asks it again after a
   * pause, when the zone's SERVFAILs are a burst (Resolver.servfailBurst), within its check's
   * deadline (workers/lane-runner/not-asked-retry.ts).
   */
  busyServfail?: string;
  /**
   * Set when the question was never sent (`zoneBackoff`, `congested`): it may be asked again after
   * this many ms. A local outcome, retryable (workers/lane-runner/not-asked-retry.ts).
   */
  retryAfterMs?: number;
  /**
   * Set when records were cut from the reply because its chain left public DNS: `name` is the
   * public name whose record pointed out, `why` the kind of name it pointed into (never the name).
   */
  leftPublicDns?: { name: string; why: string };
}

/**
 * Whether the resolver can answer: servers configured and reachable of late. `down` is a breaker
 * that re-tests the servers on its own (about once a second): it never waits for traffic to end.
 */
export type ResolverHealth = 'ready' | 'unconfigured' | 'down';

export interface QueryOptions {
  signal?: AbortSignal;
  /** The question's own deadline from when it is sent (default DNS_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Whose question it is (a workspace): waiting questions are shared max-min fair between tenants. */
  tenant?: string;
}

export interface Resolver {
  query(name: string, type: RecordType, opts?: QueryOptions): Promise<QueryResult>;
  /**
   * ready when servers are configured and the recent queries did not all fail to reach them; once
   * down, ready again within about a second of a server answering, queried or not.
   */
  readiness(): ResolverHealth;
  /** While `down`: ms until its next probe may make it ready (a 503's Retry-After); else null. */
  retryAfterMs?(): number | null;
  /**
   * Whether the zone's SERVFAILs (`busyServfail`) are a burst of late: several of its names failed
   * at once, as a resolver the zone rate-limits fails them, not one name broken on its own.
   */
  servfailBurst?(zone: string): boolean;
  /** Stops the resolver's own timers (its readiness probes); queries still work. */
  close?(): void;
}
