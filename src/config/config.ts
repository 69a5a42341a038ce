// One zod schema over the environment, parsed once before anything starts. Every problem is
// reported together so an operator fixes a bad deploy in one round, not one variable at a time.
import { isIP } from 'node:net';
import os from 'node:os';
import { z } from 'zod';
import ipaddr from 'ipaddr.js';
import { parseServer } from './dns-servers.ts';
import { parsePortMap } from './port-map.ts';
import { parseClusterNodes } from './redis-cluster-nodes.ts';
import { connectionPlan, describePlan, parseLaneProcesses } from './connection-budget.ts';
import { normalizeDomainName } from '../contract/domain-name.ts';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const hostPort = z.string().refine((s) => parseServer(s) !== null, 'must be ip or ip:port ([v6]:port for IPv6)');

const cidr = z.string().refine((s) => {
  try {
    ipaddr.parseCIDR(s.trim());
    return true;
  } catch {
    return false;
  }
}, 'must be a CIDR such as 127.0.0.0/8');

const domainSuffix = z.string().transform((s, ctx) => {
  const r = normalizeDomainName(s);
  if (!r.ok) {
    ctx.addIssue({ code: 'custom', message: `must be a domain suffix such as test or corp.internal (${r.message})` });
    return z.NEVER;
  }
  return r.name;
});

const list = <T extends z.ZodType<unknown, string>>(item: T) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item));

/** Express's names for address ranges in `trust proxy` (proxy-addr). */
const TRUST_PROXY_PRESETS = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY in Express's own forms, but never `true`: trusting every hop makes req.ip the
 * leftmost X-Forwarded-For entry, which the client writes, so each client would choose the address
 * that the per-address limits (failed authentications) count against, its own or a victim's.
 */
const trustProxy = z.string().transform((raw, ctx): false | number | string[] => {
  const v = raw.trim().toLowerCase();
  if (v === '' || v === 'false' || v === 'no' || v === '0') return false;
  if (v === 'true' || v === 'yes') {
    ctx.addIssue({
      code: 'custom',
      message:
        "true would trust every X-Forwarded-For hop, so any client could name its own address (or a victim's) to the per-address limits. Set the number of proxies in front of the service instead: 1 behind Heroku's router or one load balancer (AWS ALB, Render, Fly.io, nginx), 2 with a CDN in front of that; or the proxies' addresses as a comma list of IPs/CIDRs (e.g. 10.0.0.0/8, or loopback for a proxy on the same host)",
    });
    return z.NEVER;
  }
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops <= 32) return hops;
  }
  const entries = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = entries.filter((e) => {
    if (TRUST_PROXY_PRESETS.includes(e)) return false;
    // Strict forms only (node:net's isIP): ipaddr.js would also read "1.5" as an address.
    const [address, bits] = e.split('/');
    if (isIP(address!) === 0) return true;
    if (bits === undefined) return false;
    try {
      ipaddr.parseCIDR(e);
      return false;
    } catch {
      return true;
    }
  });
  if (entries.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a hop count (1-32: the proxies in front of the service), or a comma list of proxy addresses, CIDRs or ${TRUST_PROXY_PRESETS.join('/')}${bad.length > 0 ? ` (not one: ${bad.join(', ')})` : ''}`,
    });
    return z.NEVER;
  }
  return entries;
});

/**
 * Ranges active work (probes, transfers, handshakes, path fetches) never connects to, whatever the
 * approval: every cloud's instance metadata and the link-local ranges around it (AWS, GCP, Azure,
 * OpenStack, DigitalOcean, Oracle at 169.254.169.254; ECS task metadata 169.254.170.2; AWS's
 * resolver and time service 169.254.169.253/.123; IPv6 link-local), AWS IMDS over IPv6, Alibaba's
 * 100.100.100.200 and Azure's WireServer 168.63.129.16 (public-looking, reachable only inside
 * Azure). The outbound guard refuses them already unless ALLOW_PRIVATE_TARGETS opens them; this
 * list holds even then, for active work.
 */
export const DEFAULT_ACTIVE_DENY_CIDRS = [
  '169.254.0.0/16',
  'fe80::/10',
  'fd00:ec2::/32',
  '100.100.100.200/32',
  '168.63.129.16/32',
] as const;

/** IANA's RDAP bootstrap file for domain names (RFC 9224). */
export const IANA_RDAP_BOOTSTRAP_URL = 'https://data.iana.org/rdap/dns.json';

export const configSchema = z
  .object({
    NODE_ENV: z
      .enum(['development', 'test', 'production'])
      .default('development')
      .describe('development | test | production'),
    DATABASE_URL: z
      .string()
      .regex(/^mysql:\/\//, 'must be a mysql:// URL')
      .describe('MySQL/MariaDB connection URL (mysql://user:pass@host:port/db)'),
    // One budget of connections for the whole deployment (src/config/connection-budget.ts).
    DATABASE_MAX_CONNECTIONS: z.coerce
      .number()
      .int()
      .min(2)
      .max(100_000)
      .default(151)
      .describe(
        "Connections the whole deployment may open to MySQL, split across every role's processes (default: MySQL's and MariaDB's own max_connections, 151); checked against the server at start",
      ),
    DATABASE_RESERVED_CONNECTIONS: z.coerce
      .number()
      .int()
      .min(0)
      .max(10_000)
      .default(10)
      .describe('Of DATABASE_MAX_CONNECTIONS, left to no role: operators, the admin CLI, the release step, monitoring'),
    DATABASE_BUDGET_STRICT: bool
      .default(false)
      .describe(
        "A process whose connection budget does not fit the server's limit exits 78 at start instead of warning",
      ),
    DATABASE_CONNECTION_WAIT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(15_000)
      .describe(
        'How long a statement waits for a connection of its pool (all in use, or the server refusing new ones) before it fails as ours: a request 503, a lane task retried',
      ),
    WEB_PROCESSES: z.coerce
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(1)
      .describe('web role processes in the deployment (each runs WEB_CONCURRENCY workers): for the connection budget'),
    ORCHESTRATOR_PROCESSES: z.coerce
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(1)
      .describe('orchestrator processes in the deployment: for the connection budget'),
    LANE_PROCESSES: z
      .string()
      .default('1')
      .refine(
        (s) => parseLaneProcesses(s) !== null,
        'must be a count for every lane role (2) or a comma list lane=count with an optional count for the others (1,web=3,active=0)',
      )
      .transform((s) => parseLaneProcesses(s)!)
      .describe(
        'Processes of each lane role in the deployment, for the connection budget: a count for every lane, or lane=count entries (1,web=3,active=0)',
      ),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// URL')
      .optional()
      .describe('Redis connection URL (a single node); required unless REDIS_CLUSTER_NODES is set'),
    REDIS_CLUSTER_NODES: z
      .string()
      .optional()
      .refine(
        (s) => s === undefined || parseClusterNodes(s) !== null,
        'must be a comma list of host:port seed nodes (or redis:// / rediss:// URLs agreeing on credentials and TLS)',
      )
      .transform((s) => (s === undefined ? undefined : parseClusterNodes(s)!))
      .describe('Redis Cluster seed nodes, comma list of host:port; when set it replaces REDIS_URL'),
    // A brace in the prefix would make it the hash tag of every key: one slot for everything.
    REDIS_KEY_PREFIX: z
      .string()
      .max(64)
      .regex(/^[^{}]*$/, "must not contain { or } (they would become every key's hash tag)")
      .default('')
      .describe('Prefix for every Redis key (test isolation)'),
    PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe('Public HTTP port'),
    WEB_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(256)
      .default(Math.min(os.availableParallelism(), 4))
      .describe('Express worker processes in the web cluster'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    KEY_PEPPER: z
      .string()
      .min(32, 'must be at least 32 characters of secret')
      .describe('HMAC pepper for API key hashes'),
    CURSOR_SECRET: z
      .string()
      .min(32, 'must be at least 32 characters of secret')
      .describe('Key material for page cursors and evidence refs'),
    CURSOR_SECRET_PREVIOUS: z
      .string()
      .min(32, 'must be at least 32 characters of secret')
      .optional()
      .describe('The previous CURSOR_SECRET during a rotation: cursors it sealed stay valid until they expire'),
    DNS_SERVERS: list(hostPort)
      .optional()
      .describe(
        'Resolvers, comma list of ip[:port]; default: the system resolvers. A public recursive resolver with no private zones (docs/operations.md)',
      ),
    DNS_TIMEOUT_MS: z.coerce.number().int().min(50).max(30_000).default(2000),
    DNS_ZONE_BACKOFF_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(300_000)
      .default(10_000)
      .describe(
        'How long a name or zone whose DNS questions kept timing out is not asked again (its questions answer timeout at once; src/dns/zone-backoff.ts); 0 = never back off',
      ),
    DNS_ZONE_WINDOW_MAX: z.coerce
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(256)
      .describe(
        "Cap of a zone's congestion window: DNS questions in flight to one zone per process (AIMD, src/dns/congestion.ts)",
      ),
    DNS_SERVER_WINDOW_MAX: z.coerce
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1024)
      .describe("Cap of a DNS_SERVERS server's congestion window: DNS questions in flight to it per process"),
    DNS_QUEUE_WAIT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(120_000)
      .default(10_000)
      .describe(
        'How long a DNS question may wait in our process behind a full congestion window before it is given back unasked (a local, retryable outcome; its deadline starts when it is sent)',
      ),
    DNS_NOT_ASKED_RETRIES: z.coerce
      .number()
      .int()
      .min(0)
      .max(10)
      .default(2)
      .describe(
        "Times a lane check's DNS question that was not sent (zone backed off, congestion) is asked again after the wait it names (questions_retried)",
      ),
    DNS_SERVFAIL_RETRIES: z.coerce
      .number()
      .int()
      .min(0)
      .max(10)
      .default(3)
      .describe(
        "Times a lane check's DNS question answered SERVFAIL while its zone answered others (a resolver in front of a zone that rate-limits) is asked again, after 1 s, 2 s, 4 s… (±50 %) within the check's deadline",
      ),
    DNS_RESOLVER_VALIDATES: bool
      .default(false)
      .describe(
        'The operator states that DNS_SERVERS validate DNSSEC and are reached over a trusted path: only then is their AD bit taken as "validated" (RFC 4035 §4.9.3, RFC 7672 §2.1.3)',
      ),
    ALLOW_PRIVATE_TARGETS: list(cidr).default([]).describe('CIDRs outbound checks may reach despite being private'),
    ALLOW_SPECIAL_USE_DOMAINS: list(domainSuffix)
      .default([])
      .describe(
        'Special-use domain suffixes (test, internal, an unlisted TLD…) that inputs may name and checks may ask despite the refusal rule (docs/products/dns.md)',
      ),
    ACTIVE_DENY_CIDRS: list(cidr)
      .default([...DEFAULT_ACTIVE_DENY_CIDRS])
      .describe(
        `CIDRs active work never connects to, whatever the approval or ALLOW_PRIVATE_TARGETS (default: cloud metadata and link-local, ${DEFAULT_ACTIVE_DENY_CIDRS.join(',')}); setting it replaces the default`,
      ),
    NAT64_PREFIXES: list(
      cidr.refine((s) => {
        const [a, bits] = ipaddr.parseCIDR(s.trim());
        return a.kind() === 'ipv6' && [32, 40, 48, 56, 64, 96].includes(bits);
      }, 'an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 (RFC 6052)'),
    )
      .default([])
      .describe(
        "Network-specific NAT64 prefixes of this deployment's DNS64 (RFC 6052: /32, /40, /48, /56, /64 or /96), comma list: an address inside one is judged by the IPv4 address it embeds, like 64:ff9b::/96 always is (default: none)",
      ),
    SCOPE_PROOF_CACHE_SECONDS: z.coerce
      .number()
      .int()
      .min(0)
      .max(3600)
      .default(3600)
      .describe(
        "How long a verified scope's TXT proof, once found, is trusted before active work asks DNS again (at most an hour; 0 = every time)",
      ),
    SCOPE_REPROVE_HOURS: z.coerce
      .number()
      .int()
      .min(1)
      .max(720)
      .default(24)
      .describe(
        "How often the orchestrator proves each verified scope again at its zone's servers (hours, 1-720): a re-proof that finds the token gone suspends the scope; one that cannot say keeps it at most one more period",
      ),
    OUTBOUND_PORT_MAP: z
      .string()
      .default('')
      .refine((s) => parsePortMap(s) !== null, 'must be a comma list of port=port, e.g. 25=2525,443=8443')
      .transform((s) => parsePortMap(s)!)
      .describe(
        'Lab and tests only: where outbound connections to a well-known port really go (25=2525,443=8443); empty in production',
      ),
    OUTBOUND_CONNECTIONS_PER_ADDRESS: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(4)
      .describe(
        "Politeness: connections open at once to one target address, per process: the cap of the address's congestion window (AIMD, src/net/address-slots.ts)",
      ),
    OUTBOUND_ADDRESS_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(10)
      .describe('Politeness: the least time between two connections opened to one target address, per process'),
    OUTBOUND_QUEUE_WAIT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(120_000)
      .default(10_000)
      .describe(
        "How long a connection may wait in our process for a place in its address's congestion window before it is given up unattempted (congested: a local, retryable outcome; its deadline starts when it is attempted)",
      ),
    // LDH labels only: what goes on the EHLO line can then never carry a CR, an LF or a space.
    SMTP_HELO_NAME: z
      .string()
      .max(253)
      .regex(
        /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/,
        'must be a host name of two or more LDH labels, e.g. mail-check.example.com',
      )
      .default('lss-check.invalid')
      .describe("The name the mail lane sends in EHLO to the servers it tests; never this machine's host name"),
    BIMI_TRUST_ANCHORS: z
      .string()
      .optional()
      .describe(
        'PEM file of more BIMI mark certificate trust anchors, beside the built-in VMC/CMC roots (the lab points it at its CA)',
      ),
    RESPONSIBLE_USE_VERSION: z.string().min(1).max(64).default('2026-01'),
    OUI_EXTRA_CSV_DIR: z.string().optional().describe('Directory holding IEEE iab.csv / cid.csv'),
    IP_CONTEXT_DB: z
      .string()
      .optional()
      .describe('Path of an iptoasn.com TSV that replaces the shipped IP context dataset (docs/products/ip.md)'),
    RDAP_BOOTSTRAP_URL: z
      .union([z.literal('off'), z.string().url()])
      .default(IANA_RDAP_BOOTSTRAP_URL)
      .transform((v) => (v === 'off' ? undefined : v))
      .describe(
        'RFC 9224 bootstrap file for domain RDAP, fetched at first use and revalidated at least daily; off: the shipped snapshot only',
      ),
    RDAP_BASE_URL: z.string().url().optional(),
    METRICS_PORT: z.coerce
      .number()
      .int()
      .min(0)
      .max(65535)
      .optional()
      .describe('Port of the private /metrics listener (web default 9091; other roles off unless set)'),
    AUTH_CACHE_TTL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(5000)
      .describe('How long a verified key is trusted in process memory: the upper bound for revocation'),
    IDEMPOTENCY_TTL_HOURS: z.coerce
      .number()
      .int()
      .min(1)
      .max(24 * 30)
      .default(24),
    IDEMPOTENCY_LOCK_MS: z.coerce
      .number()
      .int()
      .min(1000)
      .max(600_000)
      .default(60_000)
      .describe('After this an in-progress idempotency record is considered abandoned and recovered'),
    JOB_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
    CANCEL_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(30_000),
    LANE_RESTART_GRACE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(600_000)
      .default(30_000)
      .describe(
        'Async products are still accepted (and queued) while a lane last heartbeat at most this long ago: a restarting lane; 0 = only while alive',
      ),
    JOB_DEADLINE_MINUTES: z.coerce
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 60)
      .optional()
      .describe(
        "Overrides every product's own job deadline (domain lookup: 2 min); past it the sweeper settles the job",
      ),
    // Monitors and webhooks (CONTRACT §14; docs/operations.md "Monitors and webhooks").
    WEBHOOK_SECRET_KEY: z
      .string()
      .min(32, 'must be at least 32 characters of secret')
      .describe('Key material that encrypts webhook signing secrets (whsec_…) at rest'),
    WEBHOOK_SECRET_KEY_PREVIOUS: z
      .string()
      .min(32, 'must be at least 32 characters of secret')
      .optional()
      .describe('The previous WEBHOOK_SECRET_KEY during a rotation: secrets it sealed still open'),
    MONITOR_MIN_INTERVAL_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(2_592_000)
      .default(3600)
      .describe('The shortest schedule a monitor may ask for (CONTRACT §14: 3600; tests set it low)'),
    MONITORS_PER_WORKSPACE: z.coerce.number().int().min(1).max(100_000).default(100),
    SUPPRESSIONS_PER_WORKSPACE: z.coerce
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1000)
      .describe('Active suppressions one workspace may hold (CONTRACT §15: 1,000)'),
    INVENTORY_RETENTION_DAYS: z.coerce
      .number()
      .int()
      .min(1)
      .max(36_500)
      .default(400)
      .describe('Inventory rows not seen for this many days are dropped (CONTRACT §16: 400)'),
    MONITOR_STARTS_PER_SECOND: z.coerce
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(50)
      .describe(
        'Monitor runs one orchestrator decides per second at most: a burst of due runs is spread out instead of taking the cores from requests',
      ),
    WEBHOOK_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(256)
      .describe('Webhook deliveries in flight at once per orchestrator'),
    WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(32)
      .describe(
        'Deliveries in flight at once to one webhook endpoint (host and port, whatever monitors share it) per orchestrator (1 while it is failing)',
      ),
    WEBHOOK_RETRY_SCHEDULE_SECONDS: list(z.string().regex(/^\d{1,5}$/, 'must be whole seconds'))
      .transform((xs) => xs.map(Number))
      .refine((xs) => xs.length > 0 && xs.every((x) => x >= 1 && x <= 86_400), 'each delay must be 1 to 86400 seconds')
      .optional()
      .describe(
        'Tests only (refused with NODE_ENV=production): the delays between webhook attempts, the last one repeating; default CONTRACT §14 (5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 3 h)',
      ),
    WEBHOOK_RETRY_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(86_400)
      .optional()
      .describe(
        'Tests only (refused with NODE_ENV=production): how long an event is retried before it is failed; default 24 h',
      ),
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
    TRUST_PROXY: trustProxy
      .default(false)
      .describe(
        "Proxies in front of the service whose X-Forwarded-For is believed: a hop count (1 behind Heroku's router) or a comma list of proxy addresses/CIDRs; never true",
      ),
  })
  .refine(
    (c) =>
      c.NODE_ENV !== 'production' ||
      (c.WEBHOOK_RETRY_SCHEDULE_SECONDS === undefined && c.WEBHOOK_RETRY_WINDOW_SECONDS === undefined),
    {
      message:
        'WEBHOOK_RETRY_SCHEDULE_SECONDS and WEBHOOK_RETRY_WINDOW_SECONDS are for tests: production keeps CONTRACT §14',
      path: ['WEBHOOK_RETRY_SCHEDULE_SECONDS'],
      when: () => true,
    },
  )
  .superRefine((c, ctx) => {
    const plan = connectionPlan(c);
    if (plan.fits) return;
    ctx.addIssue({
      code: 'custom',
      path: ['DATABASE_MAX_CONNECTIONS'],
      message: `less DATABASE_RESERVED_CONNECTIONS cannot give every process its least pool (a web worker 2, an orchestrator 10, a lane process 2): ${describePlan(plan)}. Raise the budget (and the server's max_connections) or count fewer processes (WEB_PROCESSES, WEB_CONCURRENCY, ORCHESTRATOR_PROCESSES, LANE_PROCESSES)`,
    });
  })
  .refine((c) => c.REDIS_URL !== undefined || c.REDIS_CLUSTER_NODES !== undefined, {
    message: 'set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster)',
    path: ['REDIS_URL'],
    // Also when other variables are wrong: every problem is reported in one round.
    when: () => true,
  });

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

export function parseConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
  }
  return Object.freeze(result.data);
}

/** For entry points: print every problem and exit non-zero rather than start half-configured. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}
