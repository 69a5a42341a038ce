// The whole lab in one call (and one process for `npm run up -- --lab`): every registered lab part
// is started, then the DNS lab with every part's zones, and the result is the configuration that
// points a service at it (DNS_SERVERS, RDAP_BASE_URL, OUTBOUND_PORT_MAP, ALLOW_PRIVATE_TARGETS,
// ALLOW_SPECIAL_USE_DOMAINS).
//
// A part (RDAP, the mail lab's SMTP and MTA-STS hosts, the web lab's HTTPS hosts…) is a factory
// registered in `labParts`. Parts that serve a protocol on a fixed port (SMTP 25, HTTPS 443) bind
// through ctx.listen(logicalPort, servers): every server of that logical port, whatever part it
// belongs to, shares ONE real port on its own 127.x address, and that port goes into
// OUTBOUND_PORT_MAP. Zones may depend on what a part generated at start (e.g. TLSA records of
// the certificates it issued), which is why DNS starts last.
//
// Standalone: `node test/lab/serve.ts [--dns-port 5353] [--rdap-port 8053]` prints one JSON line
// {"lab":"ready","env":{…}} and serves until SIGINT/SIGTERM.
import type net from 'node:net';
import { LAB_ALLOW, LAB_SPECIAL_USE } from './addresses.ts';
import { loadLabCa, type LabCa } from './ca.ts';
import { startLabDns, type LabDns, type LabDnsOptions } from './dns-server.ts';
import { domainZones } from './domain-zones.ts';
import { mailLabPart } from './mail-lab.ts';
import { listenOnHosts } from './multi-host.ts';
import { startLabRdap } from './rdap-server.ts';
import { labZones, type Zone } from './zones.ts';
import { privateZones } from './private-zones.ts';
import { webLabPart } from './web-lab.ts';
import { scanLabPart } from './scan-lab.ts';
import { changesLabPart } from './changes-lab.ts';

export interface LabPart {
  name: string;
  zones: Zone[];
  /** Configuration this part needs in the service (e.g. RDAP_BASE_URL). */
  env?: Record<string, string>;
  /**
   * More authoritative DNS servers on their own 127.x addresses, on the lab DNS's port (so the
   * port map's 53 reaches them too), each serving its own zones: name servers that disagree.
   */
  dnsMirrors?: Array<{ host: string; zones: Zone[] }>;
  /** Called once the lab DNS serves: a part whose zones change while the lab runs keeps `setZone`. */
  attachDns?(dns: { setZone(zone: Zone): void }): void;
  close(): Promise<void>;
}

export interface LabContext {
  ca: LabCa;
  /**
   * Binds servers on their 127.x hosts for a protocol's fixed port (25, 443, 80…). All servers of
   * one logical port share a real port, recorded in OUTBOUND_PORT_MAP.
   */
  listen(logicalPort: number, servers: Array<{ host: string; server: net.Server }>): Promise<number>;
  /** Ports requested by the standalone command line (e.g. rdap: 8053). */
  fixedPorts: Record<string, number | undefined>;
}

export type LabPartFactory = (ctx: LabContext) => Promise<LabPart>;

export const rdapPart: LabPartFactory = async (ctx) => {
  const rdap = await startLabRdap({ port: ctx.fixedPorts.rdap });
  return { name: 'rdap', zones: domainZones, env: { RDAP_BASE_URL: rdap.baseUrl }, close: () => rdap.close() };
};

/** Every lab part, in start order. New labs append their factory here. */
export const labParts: LabPartFactory[] = [rdapPart, webLabPart(), mailLabPart, scanLabPart(), changesLabPart()];

export interface RunningLab {
  /** The service configuration that points at this lab. */
  env: Record<string, string>;
  /** The lab's DNS server: publish() and withdraw() records while the lab runs (proof-of-control TXT). */
  dns: Pick<LabDns, 'publish' | 'withdraw'>;
  parts: string[];
  close(): Promise<void>;
}

export async function startLab(
  opts: {
    dnsPort?: number;
    rdapPort?: number;
    parts?: LabPartFactory[];
    /** Every DNS reply this much later (ms): the latency lab. */
    dnsDelayMs?: number;
    /** The lab DNS server rate-limits its replies as NSD's RRL does (./dns-server.ts `rateLimit`). */
    dnsRateLimit?: LabDnsOptions['rateLimit'];
  } = {},
): Promise<RunningLab> {
  const ca = await loadLabCa();
  const portMap = new Map<number, number>();
  const closers: Array<() => Promise<void>> = [];
  const ctx: LabContext = {
    ca,
    fixedPorts: { rdap: opts.rdapPort },
    async listen(logicalPort, servers) {
      const l = await listenOnHosts(servers, { port: portMap.get(logicalPort), avoid: new Set(portMap.values()) });
      portMap.set(logicalPort, l.port);
      closers.push(() => l.close());
      return l.port;
    },
  };
  const started: LabPart[] = [];
  try {
    for (const factory of opts.parts ?? labParts) started.push(await factory(ctx));
    const zones = [...labZones, ...privateZones, ...started.flatMap((p) => p.zones)];
    // The DNS port must not be a part's real port either (multi-host.ts says why): on a collision
    // another server starts before this one closes, so the kernel cannot offer the same port.
    const taken = new Set(portMap.values());
    const replyDelayMs = opts.dnsDelayMs;
    const rateLimit = opts.dnsRateLimit ? { rateLimit: opts.dnsRateLimit } : {};
    let dns = await startLabDns({ port: opts.dnsPort, zones, replyDelayMs, ...rateLimit });
    for (let i = 0; opts.dnsPort === undefined && taken.has(dns.port) && i < 20; i++) {
      const next = await startLabDns({ zones, replyDelayMs, ...rateLimit });
      await dns.close();
      dns = next;
    }
    const labDns = dns;
    closers.push(() => labDns.close());
    if (taken.has(dns.port)) throw new Error(`the lab DNS port ${dns.port} is also a part's port`);
    // Guarded TCP to port 53 (a scan's zone transfer, the mail zone lane) goes to the lab's DNS server.
    portMap.set(53, dns.port);
    for (const p of started) p.attachDns?.({ setZone: (zone) => labDns.setZone(zone) });
    for (const m of started.flatMap((p) => p.dnsMirrors ?? [])) {
      const mirror = await startLabDns({ host: m.host, port: dns.port, zones: m.zones });
      closers.push(() => mirror.close());
    }
    const env: Record<string, string> = {
      DNS_SERVERS: dns.address,
      // The lab DNS sets AD only on zones that play "signed", and only when asked: it stands in
      // for a validating resolver, so the service may trust its AD (docs/operations.md).
      DNS_RESOLVER_VALIDATES: 'true',
      ALLOW_PRIVATE_TARGETS: LAB_ALLOW,
      ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
      NODE_EXTRA_CA_CERTS: ca.caFile,
      ...Object.assign({}, ...started.map((p) => p.env ?? {})),
    };
    // One real port per logical port, or a connection on one would reach another's listener.
    if (new Set(portMap.values()).size !== portMap.size)
      throw new Error(`the lab's port map is not one-to-one: ${[...portMap].map(([l, r]) => `${l}=${r}`).join(',')}`);
    if (portMap.size > 0) env.OUTBOUND_PORT_MAP = [...portMap].map(([from, to]) => `${from}=${to}`).join(',');
    return {
      env,
      dns: { publish: labDns.publish, withdraw: labDns.withdraw },
      parts: started.map((p) => p.name),
      close: async () => {
        await Promise.allSettled([...started.map((p) => p.close()), ...closers.map((c) => c())]);
      },
    };
  } catch (err) {
    await Promise.allSettled([...started.map((p) => p.close()), ...closers.map((c) => c())]);
    throw err;
  }
}

function argValue(flag: string): number | undefined {
  const i = process.argv.indexOf(flag);
  if (i < 0) return undefined;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    process.stderr.write('usage: node test/lab/serve.ts [--dns-port 5353] [--rdap-port 8053]\n');
    process.exit(64);
  }
  return n;
}

if (import.meta.main) {
  const lab = await startLab({ dnsPort: argValue('--dns-port'), rdapPort: argValue('--rdap-port') });
  process.stdout.write(`${JSON.stringify({ lab: 'ready', parts: lab.parts, env: lab.env })}\n`);
  const stop = () => void lab.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
