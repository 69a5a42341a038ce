// The network floor of a scan of the generated zone gen<N>.test (issue 20 item 3; issue 32): the
// least time the same lab servers need to answer what a deep scan must ask at the very least, every
// name of the zone resolved once (a bare dns-packet loop over UDP, 100 questions at a time) and
// every page fetched once over HTTP (50 at a time: httpx's default of 50 threads), with the lab's
// latency when it has one (--latency). A scan's wall time divided by this floor says how much the
// service adds (planning, queues, the ledger, MySQL, the checks' own work) to the network's part.
// Only 127.0.0.0/8: the lab's DNS server and the lab's web servers through OUTBOUND_PORT_MAP.
import dgram from 'node:dgram';
import http from 'node:http';
import * as packet from 'dns-packet';
import { GEN_WEB_ADDRESSES, genZoneName } from '../lab/scan-zones.ts';

export interface Floor {
  names: number;
  pages: number;
  dnsS: number;
  httpS: number;
  totalS: number;
  /** Names that got no A answer, pages that did not answer 200: should be 0. */
  dnsFailures: number;
  httpFailures: number;
}

/** Questions in flight at once, and pages fetched at once (issue 32's floor: 100 / 50). */
export const DNS_CONCURRENCY = 100;
export const HTTP_CONCURRENCY = 50;
const TIMEOUT_MS = 5000;

/** Every name of the generated zone a deep scan must cover: the apex, h1..h(n-1), mail. */
export function genNames(n: number): string[] {
  const origin = genZoneName(n);
  return [origin, ...Array.from({ length: n - 1 }, (_, i) => `h${i + 1}.${origin}`), `mail.${origin}`];
}

async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** `dnsServer` "ip:port"; `portMap` the lab's OUTBOUND_PORT_MAP ("80=1234,443=…"). */
export async function measureFloor(n: number, dnsServer: string, portMap: string | undefined): Promise<Floor> {
  const [dnsHost, dnsPort] = dnsServer.replace(/^\[|\]/g, '').split(':') as [string, string];
  if (!dnsHost.startsWith('127.')) throw new Error(`the floor asks loopback only, not ${dnsHost}`);
  const httpPort = Number(/(?:^|,)80=(\d+)/.exec(portMap ?? '')?.[1] ?? 80);
  const names = genNames(n);

  // DNS: one UDP socket, DNS_CONCURRENCY questions in flight, answers matched by id.
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
  const waiting = new Map<number, (m: packet.Packet | null) => void>();
  socket.on('message', (msg) => {
    try {
      const m = packet.decode(msg);
      waiting.get(m.id ?? -1)?.(m);
    } catch {
      // not an answer of ours
    }
  });
  let nextId = 1;
  const addresses = new Map<string, string>();
  const cnames = new Map<string, string>();
  let dnsFailures = 0;
  const t0 = performance.now();
  await pool(names, DNS_CONCURRENCY, async (name) => {
    const id = nextId++ & 0xffff;
    const reply = await new Promise<packet.Packet | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), TIMEOUT_MS);
      waiting.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      socket.send(
        packet.encode({ type: 'query', id, flags: packet.RECURSION_DESIRED, questions: [{ type: 'A', name }] }),
        Number(dnsPort),
        dnsHost,
      );
    });
    waiting.delete(id);
    const answers = (reply?.answers ?? []) as Array<{ type: string; name: string; data: unknown }>;
    const a = answers.find((x) => x.type === 'A');
    const c = answers.find((x) => x.type === 'CNAME' && x.name.toLowerCase() === name);
    if (c) cnames.set(name, String(c.data).toLowerCase());
    if (a) addresses.set(name, String(a.data));
    else if (!c) dnsFailures++;
  });
  const dnsS = (performance.now() - t0) / 1000;
  socket.close();

  // HTTP: every name whose address (its own, or its alias target's) serves the zone's pages.
  const web = new Set(GEN_WEB_ADDRESSES);
  const addressOf = (name: string): string | undefined => addresses.get(name) ?? addresses.get(cnames.get(name) ?? '');
  const pages = names.filter((nm) => web.has(addressOf(nm) ?? ''));
  const agent = new http.Agent({ keepAlive: true, maxSockets: HTTP_CONCURRENCY });
  let httpFailures = 0;
  const t1 = performance.now();
  await pool(pages, HTTP_CONCURRENCY, async (name) => {
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get(
        { host: addressOf(name)!, port: httpPort, path: '/', headers: { host: name }, agent, timeout: TIMEOUT_MS },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
          res.on('error', () => resolve(false));
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
    });
    if (!ok) httpFailures++;
  });
  const httpS = (performance.now() - t1) / 1000;
  agent.destroy();
  return { names: names.length, pages: pages.length, dnsS, httpS, totalS: dnsS + httpS, dnsFailures, httpFailures };
}
