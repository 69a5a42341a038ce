// A webhook receiver on loopback https with a lab CA certificate (the service trusts the lab CA
// through NODE_EXTRA_CA_CERTS, set by ops/test.ts), recording every request it gets: path, the
// Standard Webhooks headers, the raw body and when it arrived. Each path answers as its test asks:
// a status, a status after N failures, a redirect, a hang, a 429/503 with Retry-After. Plus
// listeners that only count connections, for addresses that must never receive a byte.
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { loadLabCa } from '../lab/ca.ts';

export interface Received {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  at: number;
}

/** How a path answers its n-th request (0-based). */
export type Behaviour = (n: number) =>
  | { status: number; headers?: Record<string, string> }
  /** Never answer: the connection is held until the client gives up. */
  | 'hang';

export interface WebhookReceiver {
  /** The real port it listens on: the service reaches it as 443 through OUTBOUND_PORT_MAP (portMap). */
  port: number;
  /** OUTBOUND_PORT_MAP's entry for it: webhooks go to the web's own ports only. */
  portMap: string;
  /** https://<name><path>: port 443, mapped to the receiver. */
  url(path: string, name?: string): string;
  received(path?: string): Received[];
  on(path: string, behaviour: Behaviour): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(opts: { host?: string; names?: string[] } = {}): Promise<WebhookReceiver> {
  const host = opts.host ?? '127.0.0.1';
  const names = opts.names ?? ['hooks.monitor.test'];
  const ca = await loadLabCa();
  const leaf = await ca.issue({ names, ips: [host] });
  const behaviours = new Map<string, Behaviour>();
  const counts = new Map<string, number>();
  const log: Received[] = [];
  const held = new Set<import('node:http').ServerResponse>();
  const server = https.createServer({ key: leaf.keyPem, cert: leaf.chainPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const n = counts.get(path) ?? 0;
      counts.set(path, n + 1);
      log.push({
        path,
        id: String(req.headers['webhook-id'] ?? ''),
        timestamp: String(req.headers['webhook-timestamp'] ?? ''),
        signature: String(req.headers['webhook-signature'] ?? ''),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const b = behaviours.get(path)?.(n) ?? { status: 204 };
      if (b === 'hang') {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      res.writeHead(b.status, b.headers ?? {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    portMap: `443=${port}`,
    url: (path, name = names[0]!) => `https://${name}${path}`,
    received: (path) => (path ? log.filter((r) => r.path === path) : [...log]),
    on: (path, behaviour) => behaviours.set(path, behaviour),
    async close() {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP listener that only counts the connections (and bytes) it gets. */
export interface ConnectionCounter {
  connections(): number;
  bytes(): number;
  close(): Promise<void>;
}

export async function countConnections(host: string, port: number): Promise<ConnectionCounter> {
  let connections = 0;
  let bytes = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('data', (d) => {
      bytes += d.length;
    });
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    connections: () => connections,
    bytes: () => bytes,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
