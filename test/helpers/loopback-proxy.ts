// A recording HTTP proxy on 127.0.0.1 in front of a real server, for client tests: it logs every
// request (method, path, headers, arrival and reply times, status) and can let the server execute
// a request and then drop the connection instead of answering — the "uncertain write" a client
// must retry with the same Idempotency-Key.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The request body as sent. */
  body: string;
  /** performance.now() when the request reached the proxy. */
  at: number;
  /** performance.now() when the reply was sent on (or dropped). */
  answeredAt?: number;
  status?: number;
  retryAfter?: string;
  dropped: boolean;
}

export interface LoopbackProxy {
  readonly url: string;
  readonly requests: ProxiedRequest[];
  /** The next request matching `match` is forwarded, executed, and its reply thrown away. */
  dropNextReply(match: (r: ProxiedRequest) => boolean): void;
  close(): Promise<void>;
}

export async function startLoopbackProxy(target: string): Promise<LoopbackProxy> {
  const upstream = new URL(target);
  const requests: ProxiedRequest[] = [];
  const drops: Array<(r: ProxiedRequest) => boolean> = [];
  const server = http.createServer((req, res) => {
    const record: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body: '',
      at: performance.now(),
      dropped: false,
    };
    requests.push(record);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record.body = Buffer.concat(chunks).toString('utf8');
      const out = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: record.method,
          path: record.path,
          headers: req.headers,
          agent: false,
        },
        (up) => {
          const body: Buffer[] = [];
          up.on('data', (c: Buffer) => body.push(c));
          up.on('end', () => {
            record.answeredAt = performance.now();
            record.status = up.statusCode;
            if (typeof up.headers['retry-after'] === 'string') record.retryAfter = up.headers['retry-after'];
            const dropAt = drops.findIndex((m) => m(record));
            if (dropAt >= 0) {
              drops.splice(dropAt, 1);
              record.dropped = true;
              req.socket.destroy();
              return;
            }
            res.writeHead(up.statusCode ?? 502, up.headers);
            res.end(Buffer.concat(body));
          });
        },
      );
      out.on('error', () => req.socket.destroy());
      out.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    dropNextReply: (match) => void drops.push(match),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
