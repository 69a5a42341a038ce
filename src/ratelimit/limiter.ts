// Checks and consumes every policy of a request in one atomic Redis script (consume-limits.lua).
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../redis/client.ts';
import { applicationTag } from '../redis/hash-tags.ts';
import type { RatePolicy } from './policies.ts';

const SCRIPT = readFileSync(new URL('./consume-limits.lua', import.meta.url), 'utf8');

export interface PolicyState {
  policy: RatePolicy;
  remaining: number;
  /** Seconds until the policy is full again, or until it conforms when it refused. */
  resetSeconds: number;
}

export interface LimitDecision {
  allowed: boolean;
  /** The first refusing policy, in the order given. */
  refusedBy?: RatePolicy;
  retryAfterSeconds?: number;
  states: PolicyState[];
  /** The tail's output (leaseState, sameFingerprint, reply) when a tail was given. */
  tail?: [string, number, string];
}

/**
 * Two more keys and three arguments for the script's tail: the claim of an idempotency lease in the
 * same round trip (src/idempotency/lease.ts builds it and reads what the tail returns).
 */
export interface ScriptTail {
  keys: [string, string];
  args: [string, string, number];
}

type Consume = (numKeys: number, ...args: Array<string | number>) => Promise<string>;

interface PolicyShape {
  /** After the subject's tag: the policy's identity, so a changed limit starts a fresh bucket. */
  keySuffix: string;
  /** GCRA emission interval and burst tolerance, µs. */
  interval: number;
  tolerance: number;
}

// Policies are built once per principal (src/http/rate-limit.ts), so their script arguments are
// worked out once per policy object (and per list of policies) rather than once per request.
const shapes = new WeakMap<RatePolicy, PolicyShape>();
const specs = new WeakMap<RatePolicy[], string>();

/** The script's ARGV[1]: "n,interval1,tolerance1,…" (consume-limits.lua). */
function policySpec(policies: RatePolicy[]): string {
  let spec = specs.get(policies);
  if (spec === undefined) {
    spec = [policies.length, ...policies.flatMap((p) => [policyShape(p).interval, policyShape(p).tolerance])].join(',');
    specs.set(policies, spec);
  }
  return spec;
}

function policyShape(p: RatePolicy): PolicyShape {
  let shape = shapes.get(p);
  if (!shape) {
    const interval = Math.max(1, Math.round((p.windowSeconds * 1e6) / p.limit));
    shape = {
      keySuffix: `:${p.name}:${p.limit}:${p.windowSeconds}:${p.burst}`,
      interval,
      tolerance: interval * (p.burst - 1),
    };
    shapes.set(p, shape);
  }
  return shape;
}

export class RateLimiter {
  readonly #redis: RedisClient;
  constructor(redis: RedisClient) {
    this.#redis = redis;
    if (!(redis as unknown as { consumeLimits?: unknown }).consumeLimits) {
      redis.defineCommand('consumeLimits', { lua: SCRIPT });
    }
  }

  /** Keys of one subject share a hash tag, so one script serves Redis Cluster too. */
  static tag(subject: string): string {
    return applicationTag(subject);
  }

  async consume(subject: string, policies: RatePolicy[], lease?: ScriptTail): Promise<LimitDecision> {
    const tag = RateLimiter.tag(subject);
    // KEYS then ARGV, in one array: the policies' keys, the lease's keys, the policies' spec, the
    // lease's fields.
    const n = policies.length;
    const keyCount = n + (lease ? 2 : 0);
    const call: Array<number | string> = [keyCount];
    for (const p of policies) call.push(tag + policyShape(p).keySuffix);
    if (lease) call.push(lease.keys[0], lease.keys[1]);
    call.push(policySpec(policies));
    if (lease) call.push(...lease.args);
    const text = await (this.#redis as unknown as { consumeLimits: Consume }).consumeLimits(
      ...(call as [number, ...Array<number | string>]),
    );
    // "refused,wait,r1,t1,…,leaseState,leaseSame\nreply" (consume-limits.lua says why one string).
    const nl = text.indexOf('\n');
    const out = text.slice(0, nl).split(',');
    const refused = Number(out[0]);
    const states = policies.map((policy, i) => ({
      policy,
      remaining: Math.max(0, Number(out[2 + 2 * i])),
      resetSeconds: Math.max(0, Math.ceil(Number(out[3 + 2 * i]) / 1e6)),
    }));
    const tail: LimitDecision['tail'] = lease
      ? [out[2 + 2 * n]!, Number(out[3 + 2 * n]), text.slice(nl + 1)]
      : undefined;
    if (refused === 0) return { allowed: true, states, ...(tail ? { tail } : {}) };
    const waitUs = Number(out[1]);
    return {
      allowed: false,
      refusedBy: policies[refused - 1],
      // Whole seconds, at least 1, rounded up: a retry at that moment conforms.
      retryAfterSeconds: Math.max(1, Math.ceil(waitUs / 1e6)),
      states,
      ...(tail ? { tail } : {}),
    };
  }
}

/** The IETF httpapi RateLimit headers (RateLimit-Policy, RateLimit) for the policy closest to exhaustion. */
export function rateLimitHeaders(decision: LimitDecision): { policy: string; state: string } | null {
  let pick: PolicyState | undefined;
  if (!decision.allowed && decision.refusedBy) {
    pick = decision.states.find((s) => s.policy === decision.refusedBy);
  }
  for (const s of decision.states) {
    if (pick && !decision.allowed) break;
    if (!pick || s.remaining / s.policy.limit < pick.remaining / pick.policy.limit) pick = s;
  }
  if (!pick) return null;
  const t = decision.allowed ? pick.resetSeconds : (decision.retryAfterSeconds ?? pick.resetSeconds);
  return {
    policy: `"${pick.policy.name}";q=${pick.policy.limit};w=${pick.policy.windowSeconds}`,
    state: `"${pick.policy.name}";r=${pick.remaining};t=${t}`,
  };
}
