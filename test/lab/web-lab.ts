// The web lab as a LabPart: every host of ./web-hosts.ts on its own 127.0.2.x address, port 80
// and port 443 each sharing one real port (OUTBOUND_PORT_MAP 80=…,443=…), certificates from the
// lab CA issued at start, hostile peers on raw sockets, and listeners on loopback addresses
// OUTSIDE the allowlist (127.200.0.1, .2) that count every connection: tests assert they stay 0.
// Every request a lab host receives is logged (address, Host, method, path).
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { LAB_REFUSED_ADDRESS, labHost } from './addresses.ts';
import type { LabCa } from './ca.ts';
import type { LabContext, LabPart, LabPartFactory } from './serve.ts';
import type { Zone } from './zones.ts';
import { WEB_ZONE, webHosts, type Handler, type Hostile, type WebHostSpec } from './web-hosts.ts';

export const WEB_REFUSED_ADDRESSES = [LAB_REFUSED_ADDRESS, '127.200.0.2'];

export interface WebLabRequest {
  address: string;
  host: string;
  method: string;
  path: string;
  secure: boolean;
}

export interface WebLab {
  /** Every request a lab host answered (or began to). */
  requests: WebLabRequest[];
  /** Connections to the refused listeners (127.200.0.1/.2): must stay 0. */
  refusedConnections(): number;
  ports: { http: number; https: number };
}

export function webZones(): Zone[] {
  return [
    {
      origin: WEB_ZONE,
      records: [
        {
          name: '@',
          type: 'SOA',
          ttl: 3600,
          data: {
            mname: 'ns1.lab.test',
            rname: `hostmaster.${WEB_ZONE}`,
            serial: 2026112301,
            refresh: 7200,
            retry: 900,
            expire: 1209600,
            minimum: 300,
          },
        },
        { name: '@', type: 'NS', ttl: 3600, data: 'ns1.lab.test' },
        ...webHosts.map((h) => ({ name: h.label, type: 'A', data: labHost('web', h.n) })),
        { name: 'other', type: 'A', data: labHost('web', 23) },
        // A name whose address is loopback outside the allowlist: a redirect to it is refused.
        { name: 'internal', type: 'A', data: '127.200.0.2' },
      ],
    },
  ];
}

/** A raw peer: never-ending headers, a never-ending body, or silence. Timers die with the socket. */
function playHostile(socket: net.Socket, kind: Hostile): void {
  socket.on('error', () => {});
  if (kind === 'silent') return;
  let started = false;
  socket.on('data', () => {
    if (started) return;
    started = true;
    let i = 0;
    if (kind === 'endless_headers') socket.write('HTTP/1.1 200 OK\r\n');
    else socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n<html>');
    const timer = setInterval(() => {
      if (socket.destroyed) return clearInterval(timer);
      socket.write(kind === 'endless_headers' ? `x-slow-${i++}: y\r\n` : 'x');
    }, 100);
    socket.once('close', () => clearInterval(timer));
  });
}

function logged(lab: WebLab, secure: boolean, handler: Handler): http.RequestListener {
  return (req, res) => {
    lab.requests.push({
      address: req.socket.localAddress ?? '',
      host: String(req.headers.host ?? ''),
      method: req.method ?? '',
      path: req.url ?? '',
      secure,
    });
    handler(req, res);
  };
}

const toHttps: Handler = (req, res) => {
  res.writeHead(301, { location: `https://${String(req.headers.host ?? '').replace(/:\d+$/, '')}${req.url ?? '/'}` });
  res.end();
};

async function httpsServer(ca: LabCa, h: WebHostSpec, lab: WebLab): Promise<net.Server> {
  const spec = h.https;
  if (spec === 'silent') return net.createServer((s) => playHostile(s, 'silent'));
  const { withoutIntermediate, ...leaf } = spec!.cert ?? {};
  const issued = await ca.issue({ names: [`${h.label}.${WEB_ZONE}`], ...leaf });
  const options = { key: issued.keyPem, cert: withoutIntermediate ? issued.certPem : issued.chainPem, ...spec!.tls };
  const handler = spec!.handler;
  if (typeof handler === 'string') {
    const server = tls.createServer(options, (s) => playHostile(s, handler));
    server.on('tlsClientError', () => {});
    return server;
  }
  const server = https.createServer(options, logged(lab, true, handler));
  server.on('tlsClientError', () => {});
  return server;
}

function httpServer(h: WebHostSpec, lab: WebLab): net.Server | null {
  const spec = h.http;
  if (spec === null) return null;
  if (typeof spec === 'string' && spec !== 'to_https') {
    const kind = spec;
    return net.createServer((s) => playHostile(s, kind));
  }
  return http.createServer(logged(lab, false, spec === 'to_https' ? toHttps : spec));
}

export interface WebLabHooks {
  /** Called once the lab listens: tests keep the handle to read its request log. */
  onReady?(lab: WebLab): void;
}

export function webLabPart(hooks: WebLabHooks = {}): LabPartFactory {
  return async (ctx: LabContext): Promise<LabPart> => {
    let refused = 0;
    const lab: WebLab = { requests: [], refusedConnections: () => refused, ports: { http: 0, https: 0 } };
    const counter = () =>
      net.createServer((s) => {
        refused++;
        s.destroy();
      });
    const plain: Array<{ host: string; server: net.Server }> = [];
    const secure: Array<{ host: string; server: net.Server }> = [];
    for (const h of webHosts) {
      const host = labHost('web', h.n);
      const p = httpServer(h, lab);
      if (p) plain.push({ host, server: p });
      if (h.https) secure.push({ host, server: await httpsServer(ctx.ca, h, lab) });
    }
    for (const host of WEB_REFUSED_ADDRESSES) {
      plain.push({ host, server: counter() });
      secure.push({ host, server: counter() });
    }
    lab.ports.http = await ctx.listen(80, plain);
    lab.ports.https = await ctx.listen(443, secure);
    hooks.onReady?.(lab);
    return { name: 'web', zones: webZones(), close: async () => {} };
  };
}
