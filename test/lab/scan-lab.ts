// The scan lab as a LabPart: web hosts of ./scan-zones.ts on 127.0.3.x (HTTPS with lab-CA
// certificates carrying the SANs the scenarios need, and HTTP), TCP listeners for the port probe,
// and, on the out-of-scope address 127.0.3.99, counters on every probed port that an active scan
// must never touch. Every port the TCP probe knows is mapped (OUTBOUND_PORT_MAP) to a lab port,
// so a probe can never reach a real service of this machine, even on loopback.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { labHost } from './addresses.ts';
import type { LabContext, LabPart, LabPartFactory } from './serve.ts';
import {
  FLOOD_LINKS,
  GEN_WEB_ADDRESSES,
  OUT_OF_SCOPE_ADDRESS,
  PAGES_OTHER_OWNER,
  PAGES_OWNER,
  SCAN_ZONE,
  WILD_ZONE,
  genChildren,
  genFanout,
  genZoneName,
  generatedZone,
  scanAddresses,
  scanBasicZone,
  scanDnsFailZone,
  scanWildZone,
  thirdPartyZones,
} from './scan-zones.ts';
import { TCP_PORTS } from '../../src/products/scan/checks/active-checks.ts';

export interface ScanLab {
  /**
   * Connections to the out-of-scope host's probe ports (everything but 25, 53, 80, 443), each as
   * "<logical port> from <peer> at <time>" so that a failure says which probe it was: must stay [].
   */
  outOfScopeProbes(): string[];
  /** Requests the web hosts answered: address, Host, path. */
  requests: Array<{ address: string; host: string; path: string }>;
}

export interface ScanLabOptions {
  /** Generated zones to serve (benchmark): their sizes. */
  generated?: number[];
  /** Every page of a generated zone answers this much later (ms): the latency lab. */
  pageDelayMs?: number;
  onReady?(lab: ScanLab): void;
}

/** Ports some lab host of the scan scenarios answers on (fixtures for the TCP probe). */
const OPEN_PORTS: Record<string, number[]> = {
  [scanAddresses.apex]: [22, 3306],
  [scanAddresses.api]: [6379],
};
/** Ports other lab parts map, or the web servers here answer: not probe-only. */
const SHARED_PORTS = new Set([25, 53, 80, 443]);
/** A placeholder address where unmapped probe ports get a listener, so every port maps. */
const PARKING = labHost('scan', 250);

const PAGE = (title: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${links.map((l) => `<a href="https://${l}/">${l}</a>`).join('\n')}</body></html>`;

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

function send(res: http.ServerResponse, status: number, body: string, type = 'text/html; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function apexHandler(): Handler {
  const links = ['loop-a', 'chain-0', 'app.broken', 'blog', 'cdn', 'old', 'flood', 'api', '_xmpp-server._tcp'].map(
    (l) => `${l}.${SCAN_ZONE}`,
  );
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/.git/HEAD') return send(res, 200, 'ref: refs/heads/main\n', 'text/plain');
    if (path === '/.well-known/security.txt' || path === '/.env') return send(res, 404, 'not found', 'text/plain');
    send(res, 200, PAGE(SCAN_ZONE, links));
  };
}

function genHandler(sizes: number[], delayMs: number): Handler {
  const handle: Handler = (req, res) => {
    const host = String(req.headers.host ?? '')
      .split(':')[0]!
      .toLowerCase();
    const n = sizes.find((s) => host === genZoneName(s) || host.endsWith(`.${genZoneName(s)}`));
    if (!n) return send(res, 404, PAGE('unknown host'));
    const origin = genZoneName(n);
    const m = /^h(\d+)\./.exec(host);
    const i = host === origin ? 0 : m ? Number(m[1]) : -1;
    if (i < 0) return send(res, 404, PAGE('unknown host'));
    send(
      res,
      200,
      PAGE(
        host,
        genChildren(i, n, genFanout(n)).map((j) => `h${j}.${origin}`),
      ),
    );
  };
  return delayMs > 0 ? (req, res) => void setTimeout(() => handle(req, res), delayMs) : handle;
}

interface WebSite {
  address: string;
  names: string[];
  handler: Handler;
  /** HTTP only: nothing listens on the HTTPS port (the generated zones). */
  plainOnly?: boolean;
}

function sites(sizes: number[], pageDelayMs = 0): WebSite[] {
  const plain =
    (title: string): Handler =>
    (_req, res) =>
      send(res, 200, PAGE(title));
  const list: WebSite[] = [
    // The apex's certificate names an in-scope host (api) and an out-of-scope partner: SAN sources.
    {
      address: scanAddresses.apex,
      names: [SCAN_ZONE, `www.${SCAN_ZONE}`, `api.${SCAN_ZONE}`, 'partner.thirdparty-cdn.test'],
      handler: apexHandler(),
    },
    { address: scanAddresses.api, names: [`api.${SCAN_ZONE}`, `app.broken.${SCAN_ZONE}`], handler: plain('api') },
    { address: scanAddresses.chainEnd, names: [`chain-40.${SCAN_ZONE}`], handler: plain('end of the chain') },
    {
      address: scanAddresses.flood,
      names: [`flood.${SCAN_ZONE}`],
      handler: (_req, res) =>
        send(
          res,
          200,
          PAGE(
            'flood',
            Array.from({ length: FLOOD_LINKS }, (_, i) => `f${i}.${SCAN_ZONE}`),
          ),
        ),
    },
    // The provider's unclaimed-name page (a lab copy of GitHub Pages' 404).
    {
      address: scanAddresses.provider,
      names: ['lss-lab.github.io'],
      handler: (_req, res) =>
        send(
          res,
          404,
          PAGE('Site not found · GitHub Pages', []).replace(
            '</h1>',
            "</h1><p>There isn't a GitHub Pages site here.</p>",
          ),
        ),
    },
    {
      address: scanAddresses.wildReal,
      names: [WILD_ZONE, `real.${WILD_ZONE}`, `www.${WILD_ZONE}`],
      handler: plain('scan-wild'),
    },
    { address: scanAddresses.wildcard, names: [`*.${WILD_ZONE}`], handler: plain('wildcard') },
    { address: scanAddresses.cnameTarget, names: [`target.${WILD_ZONE}`], handler: plain('cname target') },
    // Two owners under the private suffix github.io on one address: alice's page links to bob's.
    {
      address: scanAddresses.pages,
      names: [PAGES_OWNER, `www.${PAGES_OWNER}`, PAGES_OTHER_OWNER],
      handler: (req, res) =>
        send(res, 200, PAGE(String(req.headers.host ?? ''), [PAGES_OTHER_OWNER, `blog.${PAGES_OTHER_OWNER}`])),
    },
    // The CDN edge (out of scope): visited only by passive web checks of in-scope aliases.
    {
      address: OUT_OF_SCOPE_ADDRESS,
      names: ['edge.thirdparty-cdn.test', `cdn.${SCAN_ZONE}`],
      handler: plain('cdn edge'),
    },
  ];
  if (sizes.length > 0) {
    const names = sizes.flatMap((n) => [genZoneName(n), `*.${genZoneName(n)}`]);
    const handler = genHandler(sizes, pageDelayMs);
    for (const address of GEN_WEB_ADDRESSES) list.push({ address, names, handler, plainOnly: true });
  }
  return list;
}

export function scanLabPart(opts: ScanLabOptions = {}): LabPartFactory {
  return async (ctx: LabContext): Promise<LabPart> => {
    const outOfScope: string[] = [];
    const lab: ScanLab = { outOfScopeProbes: () => [...outOfScope], requests: [] };
    const logged =
      (address: string, h: Handler): Handler =>
      (req, res) => {
        lab.requests.push({ address, host: String(req.headers.host ?? ''), path: req.url ?? '/' });
        h(req, res);
      };
    const plainServers: Array<{ host: string; server: net.Server }> = [];
    const secureServers: Array<{ host: string; server: net.Server }> = [];
    for (const s of sites(opts.generated ?? [], opts.pageDelayMs)) {
      plainServers.push({ host: s.address, server: http.createServer(logged(s.address, s.handler)) });
      if (s.plainOnly) continue;
      const cert = await ctx.ca.issue({ names: s.names });
      secureServers.push({
        host: s.address,
        server: https.createServer({ key: cert.keyPem, cert: cert.chainPem }, logged(s.address, s.handler)),
      });
    }
    await ctx.listen(80, plainServers);
    await ctx.listen(443, secureServers);
    // Every probe port maps to a lab port: fixture listeners, counters on the out-of-scope host.
    const open = () => net.createServer((s) => s.destroy());
    for (const { port } of TCP_PORTS) {
      if (SHARED_PORTS.has(port)) continue;
      const servers: Array<{ host: string; server: net.Server }> = [
        {
          host: OUT_OF_SCOPE_ADDRESS,
          server: net.createServer((s) => {
            outOfScope.push(`${port} from ${s.remoteAddress}:${s.remotePort} at ${new Date().toISOString()}`);
            s.destroy();
          }),
        },
        { host: PARKING, server: open() },
      ];
      for (const [address, ports] of Object.entries(OPEN_PORTS))
        if (ports.includes(port)) servers.push({ host: address, server: open() });
      await ctx.listen(port, servers);
    }
    opts.onReady?.(lab);
    return {
      name: 'scan',
      zones: [
        scanBasicZone(),
        scanWildZone(),
        scanDnsFailZone(),
        ...thirdPartyZones(),
        ...(opts.generated ?? []).map(generatedZone),
      ],
      close: async () => {},
    };
  };
}
