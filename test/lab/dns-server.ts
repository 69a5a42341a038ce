// The lab's authoritative DNS server: fixture zones (./zones.ts) over UDP and TCP on loopback,
// built on dns-packet. It answers with AA=1 for its zones, REFUSED for any other name (no
// recursion), follows CNAMEs inside its zones, synthesises wildcards, truncates UDP replies that
// exceed the client's EDNS size (512 without EDNS), and plays the hostile behaviours the zones
// ask for (silence, wrong ids, garbage, delays, error rcodes).
//
// In tests: `const lab = await startLabDns()` and DNS_SERVERS=lab.address. Besides the public lab
// zones it serves private ones (./private-zones.ts: cluster.local, corp.internal, a private reverse
// zone, localhost), as a resolver with private zones would.
// Standalone (npm run up -- --lab): `node test/lab/dns-server.ts --port 5353`.
import dgram from 'node:dgram';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import * as packet from 'dns-packet';
import { labZones, type Behaviour, type NameBehaviour, type Zone, type ZoneRecord } from './zones.ts';
import { privateZones } from './private-zones.ts';

export interface LabDns {
  host: string;
  port: number;
  /** "127.0.0.1:PORT", ready for DNS_SERVERS. */
  address: string;
  /** Serves `zone` from now on in place of the zone of the same origin (a zone served in two states). */
  setZone(zone: Zone): void;
  /**
   * Serves records at `name` (inside one of the lab's zones) from now on, beside the zone's own:
   * what a domain's owner publishes (a proof-of-control TXT record). Replaces what was published there of that type.
   */
  publish(name: string, type: string, data: ZoneRecord['data'][], ttl?: number): void;
  /** Stops serving what publish() put at `name` (of `type`, or of every type): NXDOMAIN again if nothing else is there. */
  withdraw(name: string, type?: string): void;
  /** Questions received so far (UDP and TCP), by "<name> <type>" in lower case. */
  readonly asked: Map<string, number>;
  /** UDP replies the rate limit dropped (`rateLimit`), and those it sent truncated instead (slip). */
  readonly limited: { dropped: number; slipped: number };
  close(): Promise<void>;
}

export interface LabDnsOptions {
  port?: number;
  host?: string;
  zones?: Zone[];
  /** Every reply this much later (ms): the latency lab (test/bench/scan.ts --latency). */
  replyDelayMs?: number;
  /**
   * Response rate limiting as NSD and BIND do it by default (RRL): at most `responsesPerSecond`
   * UDP replies a second to one client address (a token bucket holding one second's worth); the
   * replies beyond it are dropped, or with `slip` every slip-th of them is sent truncated (TC=1,
   * no answer) so a real client retries over TCP, which is not limited. Default slip 0: every
   * excess reply dropped, the harshest case. `excess: 'servfail'` answers the excess SERVFAIL
   * instead: what a recursive resolver in front of such a zone answers when its own questions
   * were dropped and it gave up on them (Unbound does), so the client sees a fast SERVFAIL for a
   * zone that works.
   */
  rateLimit?: { responsesPerSecond: number; slip?: number; excess?: 'drop' | 'servfail' };
}

/** "<name> <type>" of a query, for LabDns.asked ('' when it does not decode). */
function questionOf(msg: Buffer): string {
  try {
    const q = packet.decode(msg).questions?.[0];
    return q ? `${q.name.toLowerCase()} ${q.type}` : '';
  } catch {
    return '';
  }
}

const RCODES = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const DEFAULT_TTL = 300;

interface CompiledZone {
  origin: string;
  zone: Zone;
  /** Absolute lower-case owner name → records. */
  byName: Map<string, ZoneRecord[]>;
  /** Every owner name and every name above it up to the origin (empty non-terminals exist). */
  existing: Set<string>;
  behaviours: Array<NameBehaviour & { name: string }>;
  soa: packet.Answer;
}

const lower = (n: string) => n.replace(/\.$/, '').toLowerCase();

function absolute(name: string, origin: string): string {
  if (name === '@') return origin;
  return name.endsWith('.') ? lower(name) : `${lower(name)}.${origin}`;
}

function compile(zone: Zone): CompiledZone {
  const origin = lower(zone.origin);
  const byName = new Map<string, ZoneRecord[]>();
  const existing = new Set<string>([origin]);
  for (const r of zone.records) {
    const owner = absolute(r.name, origin);
    const list = byName.get(owner) ?? [];
    list.push({ ...r, name: owner, ttl: r.ttl ?? zone.ttl ?? DEFAULT_TTL });
    byName.set(owner, list);
    for (let n = owner; n.length > origin.length && n.includes('.'); n = n.slice(n.indexOf('.') + 1)) existing.add(n);
  }
  const soaRecord = byName.get(origin)?.find((r) => r.type === 'SOA');
  return {
    origin,
    zone,
    byName,
    existing,
    behaviours: (zone.behaviours ?? []).map((b) => ({ ...b, name: absolute(b.name, origin) })),
    soa: toAnswer(
      soaRecord ?? {
        name: origin,
        type: 'SOA',
        ttl: DEFAULT_TTL,
        data: { mname: origin, rname: `hostmaster.${origin}` },
      },
    ),
  };
}

function toAnswer(r: ZoneRecord, owner = r.name): packet.Answer {
  // dns-packet's encoders mutate their input (TXT strings become Buffers): hand them copies.
  const data = Array.isArray(r.data)
    ? [...r.data]
    : r.data && typeof r.data === 'object' && !Buffer.isBuffer(r.data)
      ? { ...r.data }
      : r.data;
  return { name: owner, type: r.type, class: 'IN', ttl: r.ttl ?? DEFAULT_TTL, data } as packet.Answer;
}

interface Resolution {
  rcode: number;
  answers: packet.Answer[];
  authorities: packet.Answer[];
}

class LabZones {
  zones: CompiledZone[];
  /** Records published while the server runs (publish/withdraw), by owner name. */
  readonly published = new Map<string, ZoneRecord[]>();
  constructor(zones: Zone[]) {
    // Longest origin first, so a child zone (ad.lab.test) wins over its parent (lab.test).
    this.zones = zones.map(compile).sort((a, b) => b.origin.length - a.origin.length);
  }

  replace(zone: Zone): void {
    const next = compile(zone);
    this.zones = [...this.zones.filter((z) => z.origin !== next.origin), next].sort(
      (a, b) => b.origin.length - a.origin.length,
    );
  }

  zoneFor(name: string): CompiledZone | undefined {
    return this.zones.find((z) => name === z.origin || name.endsWith(`.${z.origin}`));
  }

  /** The records at `name` ([] for a name that exists without records), null when it does not exist. */
  private lookup(z: CompiledZone, name: string): ZoneRecord[] | null {
    const extra = this.published.get(name);
    const exact = z.byName.get(name);
    if (extra && extra.length > 0) return [...(exact ?? []), ...extra];
    if (exact) return exact;
    if (z.existing.has(name)) return [];
    // RFC 4592: the wildcard at the closest encloser stands in for names that do not exist.
    let encloser = name;
    while (encloser !== z.origin && !z.existing.has(encloser)) encloser = encloser.slice(encloser.indexOf('.') + 1);
    const wild = z.byName.get(`*.${encloser}`);
    return wild ? wild.map((r) => ({ ...r, name })) : null;
  }

  /**
   * `transport`: a CNAME target whose zone answers an error rcode (a broken subzone's behaviour)
   * ends the chain with that rcode and the aliases so far, as a recursive resolver answers a
   * chain into a zone whose servers fail (RFC 6604: the rcode is the last target's).
   */
  resolve(qname: string, qtype: string, transport?: Transport): Resolution {
    const answers: packet.Answer[] = [];
    const seen = new Set<string>();
    let name = qname;
    for (;;) {
      seen.add(name);
      const z = this.zoneFor(name);
      if (!z) return { rcode: RCODES.NOERROR, answers, authorities: [] }; // chain leaves the lab
      const along = name !== qname && transport ? behaviourFor(z, name, qtype, transport) : null;
      if (along?.kind === 'rcode') return { rcode: RCODES[along.rcode], answers, authorities: [] };
      const rrs = this.lookup(z, name);
      if (rrs === null) return { rcode: RCODES.NXDOMAIN, answers, authorities: [z.soa] };
      const ofType = rrs.filter((r) => r.type === qtype || qtype === 'ANY');
      if (ofType.length > 0) {
        answers.push(...ofType.map((r) => toAnswer(r, name)));
        return { rcode: RCODES.NOERROR, answers, authorities: [] };
      }
      const cname = rrs.find((r) => r.type === 'CNAME');
      if (!cname) return { rcode: RCODES.NOERROR, answers, authorities: [z.soa] }; // NODATA
      answers.push(toAnswer(cname, name));
      const target = lower(String(cname.data));
      if (seen.has(target)) return { rcode: RCODES.NOERROR, answers, authorities: [] }; // a loop: stop
      name = target;
    }
  }
}

type Transport = 'udp' | 'tcp';
/** What to send for one query: bytes now, bytes later, or nothing. */
type Action = { send: Buffer | null; delayMs?: number };

function behaviourFor(z: CompiledZone | undefined, name: string, type: string, transport: Transport): Behaviour | null {
  const b = z?.behaviours.find(
    (x) =>
      (x.name === name || (x.subtree && name.endsWith(`.${x.name}`))) &&
      (!x.types || x.types.includes(type)) &&
      (!x.transport || x.transport === transport),
  );
  return b?.behaviour ?? null;
}

/** Plausible-looking garbage: our id and QR so a client must parse it to reject it, then noise. */
function garbage(id: number): Buffer {
  const buf = randomBytes(96);
  buf.writeUInt16BE(id, 0);
  buf.writeUInt16BE(0x8180, 2);
  buf.writeUInt16BE(1, 4);
  buf.writeUInt16BE(7, 6);
  return buf;
}

/** A queries seen per rebinding name (per server). */
type RebindCounts = Map<string, number>;

function respond(zones: LabZones, msg: Buffer, transport: Transport, rebinds: RebindCounts = new Map()): Action {
  let query: packet.DecodedPacket;
  try {
    query = packet.decode(msg);
  } catch {
    return { send: null };
  }
  if (query.flag_qr) return { send: null };
  const id = query.id ?? 0;
  const opt = (query.additionals ?? []).find((a) => a.type === 'OPT') as packet.OptAnswer | undefined;
  const base = {
    type: 'response' as const,
    id,
    questions: query.questions ?? [],
    additionals: opt
      ? [
          {
            type: 'OPT' as const,
            name: '.',
            udpPayloadSize: 1232,
            extendedRcode: 0,
            ednsVersion: 0,
            flags: 0,
            flag_do: false,
            options: [],
          },
        ]
      : [],
  };
  const rd = (query.flags ?? 0) & packet.RECURSION_DESIRED; // echoed, as RFC 1035 asks
  const q = query.questions?.[0];
  if (!q || (query.questions?.length ?? 0) !== 1)
    return { send: packet.encode({ ...base, flags: rd | RCODES.FORMERR }) };

  const qname = lower(q.name);
  const zone = zones.zoneFor(qname);
  if (!zone) return { send: packet.encode({ ...base, flags: rd | RCODES.REFUSED }) };
  // AD only for a client that asked for it with AD or DO, as a validating resolver does (RFC 6840
  // §5.7), so a client that never sets either is seen never to get it.
  const asksAd = ((query.flags ?? 0) & packet.AUTHENTIC_DATA) !== 0 || opt?.flag_do === true;
  // A zone served as a cache or a forwarder would (`notAuthoritative`): the same data, AA=0.
  const aa = zone.zone.notAuthoritative ? 0 : packet.AUTHORITATIVE_ANSWER;
  const flags = aa | rd | (zone.zone.authenticatedData && asksAd ? packet.AUTHENTIC_DATA : 0);

  const behaviour = behaviourFor(zone, qname, q.type, transport);
  if (behaviour?.kind === 'rcode') return { send: packet.encode({ ...base, flags: flags | RCODES[behaviour.rcode] }) };
  if (behaviour?.kind === 'silent') return { send: null };
  if (behaviour?.kind === 'garbage') return { send: garbage(id) };
  if (behaviour?.kind === 'random-a') {
    const answers =
      q.type === 'A'
        ? [
            {
              name: qname,
              type: 'A' as const,
              class: 'IN' as const,
              ttl: 60,
              data: `${behaviour.prefix}${1 + Math.floor(Math.random() * 250)}`,
            },
          ]
        : [];
    return { send: packet.encode({ ...base, flags, answers, authorities: answers.length ? [] : [zone.soa] }) };
  }
  if (behaviour?.kind === 'rebind' && q.type === 'A') {
    const seen = rebinds.get(qname) ?? 0;
    rebinds.set(qname, seen + 1);
    if (seen >= behaviour.after) {
      const answers = [{ name: qname, type: 'A' as const, class: 'IN' as const, ttl: 0, data: behaviour.address }];
      return { send: packet.encode({ ...base, flags, answers }) };
    }
  }
  if (q.type === 'AXFR') {
    // A transfer is a TCP affair, and only a zone that allows it gets one (SOA, records, SOA).
    if (transport !== 'tcp' || !zone.zone.allowAxfr || qname !== zone.origin)
      return { send: packet.encode({ ...base, flags: flags | RCODES.REFUSED }) };
    const records = [...zone.byName.values()]
      .flat()
      .filter((r) => r.type !== 'SOA')
      .map((r) => toAnswer(r));
    return { send: packet.encode({ ...base, flags, answers: [zone.soa, ...records, zone.soa] }) };
  }

  const r = zones.resolve(qname, q.type, transport);
  const full = {
    ...base,
    id: behaviour?.kind === 'wrong-id' ? (id + 1) & 0xffff : id,
    flags: flags | r.rcode,
    answers: r.answers,
    authorities: r.authorities,
  };
  let bytes = packet.encode(full);
  const limit = transport === 'tcp' ? 0xffff : opt ? Math.max(512, opt.udpPayloadSize) : 512;
  if (bytes.length > limit) {
    // Truncated: header and question only, TC=1, so the client retries over TCP (RFC 2181 §9).
    bytes = packet.encode({ ...base, id: full.id, flags: full.flags | packet.TRUNCATED_RESPONSE });
  }
  return { send: bytes, delayMs: behaviour?.kind === 'delay' ? behaviour.ms : undefined };
}

export async function startLabDns(opts: LabDnsOptions = {}): Promise<LabDns> {
  const host = opts.host ?? '127.0.0.1';
  const zones = new LabZones(opts.zones ?? [...labZones, ...privateZones]);
  const rebinds: RebindCounts = new Map();
  const timers = new Set<NodeJS.Timeout>();
  const connections = new Set<net.Socket>();
  let closed = false;

  const asked = new Map<string, number>();
  const count = (msg: Buffer) => {
    const q = questionOf(msg);
    asked.set(q, (asked.get(q) ?? 0) + 1);
  };
  const later = (behaviourMs: number | undefined, fn: () => void) => {
    const ms = (behaviourMs ?? 0) + (opts.replyDelayMs ?? 0);
    if (!ms) return fn();
    const t = setTimeout(() => {
      timers.delete(t);
      if (!closed) fn();
    }, ms);
    timers.add(t);
  };

  const onConnection = (socket: net.Socket) => {
    connections.add(socket);
    let buffered = Buffer.alloc(0);
    socket.on('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const msg = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(2 + msg.length);
        count(msg);
        const action = respond(zones, msg, 'tcp', rebinds);
        if (!action.send) continue;
        const frame = Buffer.alloc(2 + action.send.length);
        frame.writeUInt16BE(action.send.length, 0);
        action.send.copy(frame, 2);
        later(action.delayMs, () => {
          if (!socket.destroyed) socket.write(frame);
        });
      }
    });
  };

  const limited = { dropped: 0, slipped: 0 };
  const rrl = opts.rateLimit ? rateLimiter(opts.rateLimit.responsesPerSecond) : null;
  const slip = Math.max(0, Math.floor(opts.rateLimit?.slip ?? 0));
  const { udp, tcp, port } = await bindBoth(host, opts.port ?? 0, onConnection);
  udp.on('message', (msg, rinfo) => {
    count(msg);
    const action = respond(zones, msg, 'udp', rebinds);
    let bytes = action.send;
    if (bytes && rrl && !rrl(rinfo.address)) {
      limited.dropped++;
      if (opts.rateLimit?.excess === 'servfail') bytes = servfail(bytes);
      else if (slip > 0 && limited.dropped % slip === 0) {
        limited.slipped++;
        bytes = truncated(bytes);
      } else bytes = null;
    }
    if (bytes) {
      const reply = bytes;
      later(action.delayMs, () => udp.send(reply, rinfo.port, rinfo.address));
    }
  });

  const address = net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
  return {
    host,
    port,
    address,
    setZone: (zone) => zones.replace(zone),
    publish(name, type, data, ttl = 60) {
      const owner = lower(name);
      if (!zones.zoneFor(owner)) throw new Error(`${owner} is in none of the lab's zones`);
      const kept = (zones.published.get(owner) ?? []).filter((r) => r.type !== type);
      zones.published.set(owner, [...kept, ...data.map((d) => ({ name: owner, type, ttl, data: d }))]);
    },
    withdraw(name, type) {
      const owner = lower(name);
      const kept = type ? (zones.published.get(owner) ?? []).filter((r) => r.type !== type) : [];
      if (kept.length > 0) zones.published.set(owner, kept);
      else zones.published.delete(owner);
    },
    asked,
    limited,
    close: async () => {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      for (const c of connections) c.destroy();
      await Promise.all([
        new Promise<void>((r) => udp.close(() => r())),
        new Promise<void>((r) => tcp.close(() => r())),
      ]);
    },
  };
}

/**
 * A token bucket per client address: `perSecond` tokens a second, at most one second's worth
 * held; a reply takes one. Returns whether the reply may be sent.
 */
function rateLimiter(perSecond: number): (client: string) => boolean {
  const rate = Math.max(1, perSecond);
  const buckets = new Map<string, { tokens: number; at: number }>();
  return (client) => {
    const now = performance.now();
    const b = buckets.get(client) ?? { tokens: rate, at: now };
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) * rate) / 1000);
    b.at = now;
    buckets.set(client, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  };
}

/** The reply cut to its header and question with TC=1 (RRL's "slip"); the bytes as they were if they do not decode. */
function truncated(reply: Buffer): Buffer {
  try {
    const r = packet.decode(reply);
    return packet.encode({
      type: 'response',
      id: r.id ?? 0,
      flags: (r.flags ?? 0) | packet.TRUNCATED_RESPONSE,
      questions: r.questions ?? [],
    });
  } catch {
    return reply;
  }
}

/** The reply as a SERVFAIL: header and question, rcode 2, no records. */
function servfail(reply: Buffer): Buffer {
  try {
    const r = packet.decode(reply);
    return packet.encode({
      type: 'response',
      id: r.id ?? 0,
      flags: ((r.flags ?? 0) & ~0xf & ~packet.AUTHORITATIVE_ANSWER) | packet.RECURSION_AVAILABLE | 2,
      questions: r.questions ?? [],
    });
  } catch {
    return reply;
  }
}

/** UDP and TCP on the same port; with port 0, retry until the UDP port is also free for TCP. */
async function bindBoth(host: string, port: number, onConnection: (s: net.Socket) => void) {
  const family = net.isIPv6(host) ? 'udp6' : 'udp4';
  for (let tries = 0; ; tries++) {
    const udp = dgram.createSocket(family);
    udp.on('error', () => {}); // a client's ICMP errors must not bring the lab down
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(port, host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    const bound = udp.address().port;
    const tcp = net.createServer(onConnection);
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(bound, host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
      return { udp, tcp, port: bound };
    } catch (err) {
      udp.close();
      if (port !== 0 || tries >= 20) throw err;
    }
  }
}

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (import.meta.main) {
  const port = Number(argValue('--port') ?? 5353);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write('usage: node test/lab/dns-server.ts [--port 5353] [--host 127.0.0.1]\n');
    process.exit(64);
  }
  // Standalone (npm run up -- --lab) serves every fixture zone, the domain lookup's too.
  const { labZones } = await import('./zones.ts');
  const { domainZones } = await import('./domain-zones.ts');
  const lab = await startLabDns({
    port,
    host: argValue('--host'),
    zones: [...labZones, ...privateZones, ...domainZones],
  });
  process.stdout.write(`${JSON.stringify({ lab: 'dns', address: lab.address, host: lab.host, port: lab.port })}\n`);
  const stop = () => void lab.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
