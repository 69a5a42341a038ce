// The lab's RDAP server: fixture registrations (./rdap-fixtures.ts) over HTTP on loopback.
//   GET /domain/<name>                 RFC 9083 domain object, 404 + RDAP error body when unknown
//   GET /registry-b/domain/<name>      a second "registry", the target of the redirect fixture
//   GET /bootstrap/dns.json            an RFC 9224 file mapping "test" to this server
// Fixtures may also hang (never answer), fail (500) or redirect (also to a metadata address).
//
// In tests: `const rdap = await startLabRdap()` and RDAP_BASE_URL=rdap.baseUrl (or
// RDAP_BOOTSTRAP_URL=rdap.bootstrapUrl), with ALLOW_PRIVATE_TARGETS=127.0.0.0/8.
// Standalone: `node test/lab/rdap-server.ts --port 8053`.
import http from 'node:http';
import type { Socket } from 'node:net';
import { notFoundBody, rdapFixtures, type RdapFixture } from './rdap-fixtures.ts';

export interface LabRdap {
  host: string;
  port: number;
  /** "http://127.0.0.1:PORT/", ready for RDAP_BASE_URL. */
  baseUrl: string;
  /** The bootstrap file of this server, ready for RDAP_BOOTSTRAP_URL. */
  bootstrapUrl: string;
  /** Paths requested so far (to assert what was, or was not, asked). */
  requests: string[];
  close(): Promise<void>;
}

export interface LabRdapOptions {
  port?: number;
  host?: string;
  /** Extra fixtures: name → absolute URL that `GET /domain/<name>` redirects to (302). */
  redirects?: Record<string, string>;
}

const RDAP_JSON = 'application/rdap+json';

export async function startLabRdap(opts: LabRdapOptions = {}): Promise<LabRdap> {
  const host = opts.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  let baseUrl = '';
  let closed: Promise<void> | null = null;

  const send = (res: http.ServerResponse, status: number, body: unknown, type = RDAP_JSON) => {
    const bytes = Buffer.from(JSON.stringify(body));
    res.writeHead(status, { 'content-type': type, 'content-length': bytes.length, 'access-control-allow-origin': '*' });
    res.end(bytes);
  };

  const serve = (res: http.ServerResponse, fixture: RdapFixture | undefined, name: string) => {
    if (!fixture) return send(res, 404, notFoundBody(name));
    switch (fixture.kind) {
      case 'domain':
        return send(res, 200, fixture.body);
      case 'status':
        return send(res, fixture.status, fixture.body);
      case 'hang':
        return; // the socket stays open until the client gives up or the lab closes
      case 'redirect': {
        const location = fixture.location.startsWith('/')
          ? new URL(fixture.location.slice(1), baseUrl).href
          : fixture.location;
        res.writeHead(302, { location, 'content-length': 0 });
        res.end();
      }
    }
  };

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://lab').pathname;
    requests.push(path);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, { errorCode: 405, title: 'Method Not Allowed' });
    // Fixtures are computed per request, so relative dates follow the clock.
    const fixtures = rdapFixtures(baseUrl);
    let m = /^\/domain\/([^/]+)$/.exec(path);
    if (m) {
      const name = decodeURIComponent(m[1]!).toLowerCase().replace(/\.$/, '');
      const away = opts.redirects?.[name];
      return serve(res, away ? { kind: 'redirect', location: away } : fixtures.get(name), name);
    }
    m = /^\/registry-b\/domain\/([^/]+)$/.exec(path);
    if (m) {
      const name = decodeURIComponent(m[1]!).toLowerCase();
      return serve(res, fixtures.get(`registry-b:${name}`), name);
    }
    if (path === '/bootstrap/dns.json') {
      return send(
        res,
        200,
        {
          description: 'RDAP bootstrap file for Domain Name System registrations (lab)',
          publication: '2026-01-01T00:00:00Z',
          version: '1.0',
          services: [[['test'], [baseUrl]]],
        },
        'application/json',
      );
    }
    if (path === '/help')
      return send(res, 200, {
        rdapConformance: ['rdap_level_0'],
        notices: [{ title: 'Lab', description: ['RDAP lab server'] }],
      });
    return send(res, 400, { errorCode: 400, title: 'Bad Request', description: ['Unsupported query'] });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}/`;

  return {
    host,
    port,
    baseUrl,
    bootstrapUrl: `${baseUrl}bootstrap/dns.json`,
    requests,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy(); // including the ones held by "hang" fixtures
      });
      return closed;
    },
  };
}

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (import.meta.main) {
  const port = Number(argValue('--port') ?? 8053);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write('usage: node test/lab/rdap-server.ts [--port 8053] [--host 127.0.0.1]\n');
    process.exit(64);
  }
  const lab = await startLabRdap({ port, host: argValue('--host') });
  process.stdout.write(
    `${JSON.stringify({ lab: 'rdap', baseUrl: lab.baseUrl, bootstrapUrl: lab.bootstrapUrl, port: lab.port })}\n`,
  );
  const stop = () => void lab.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
