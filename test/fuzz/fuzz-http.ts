// The HTTP fuzzer (issue 7 §5): requests built from the contract's own schemas and from hostile
// generators — nesting, encodings, header bytes, sizes, methods, path forms — sent as raw bytes to
// a real running service, each reply checked against the invariants every reply must keep:
//   - no 5xx other than the documented 503s of a product that cannot run here;
//   - every error is the CONTRACT §3 envelope with a registry code whose status matches, and an
//     X-Request-Id equal to error.requestId; every reply carries an X-Request-Id;
//   - no stack trace, SQL or file path in any body;
//   - (checked by the caller on the service's logs) no secret in any log line.
// Requests come from fc.sample with a seed, in fixed-size chunks: the same seed replays the same
// request sequence, and every violation names the seed and the request's index.
import fc from 'fast-check';
import { errorCodes, errorRegistry, type ErrorCode } from '../../src/contract/errors.ts';
import { rawRequest, type RawReply } from '../helpers/raw-http.ts';
import { anyJson, bodyFor, interestingString, type SchemaContext } from './schema-arbitrary.ts';

export interface FuzzTarget {
  port: number;
  keys: {
    /** Every scope, limits raised so most requests pass the limiter. */
    full: string;
    readOnly: string;
    noFindingScope: string;
    revoked: string;
    /** A key of another workspace (its jobs are not ours). */
    other: string;
  };
  jobRefs: string[];
  foreignJobRefs: string[];
  objectIds: string[];
  /** The OpenAPI document the service serves. */
  openapi: Record<string, any>;
}

export interface FuzzRequest {
  kind: string;
  bytes: Buffer;
  method: string;
}

export interface Violation {
  index: number;
  kind: string;
  problem: string;
  request: string;
  reply: string;
}

export interface FuzzStats {
  requests: number;
  byStatus: Record<string, number>;
  byCode: Record<string, number>;
  byKind: Record<string, number>;
  unexplained5xx: number;
  violations: Violation[];
}

/** 503s the service documents for a product that cannot run where it is fuzzed (no lane workers). */
const EXPLAINED_503: readonly ErrorCode[] = ['capability_unavailable', 'scan_profile_unavailable'];
const LEAKS =
  /\bat [\w.<>]+ \(|node_modules|\/work\/|\/src\/|\.ts:\d+|\bSELECT\b|\bINSERT INTO\b|\bER_[A-Z_]+|Error: |sqlMessage|ECONNREFUSED/;
const METHODS = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'get',
  'Post',
  'PROPFIND',
  'FROB',
  'M-SEARCH',
  'PURGE',
];

// ---- request building --------------------------------------------------------------------

interface Parts {
  method: string;
  target: string;
  headers: Array<[string, string]>;
  body?: Buffer;
  /** Leave Content-Length to the caller's headers (for the length-conflict cases). */
  noLength?: boolean;
}

function encode(p: Parts): Buffer {
  const lines = [`${p.method} ${p.target} HTTP/1.1`, 'Host: fuzz.lab.test'];
  for (const [k, v] of p.headers) lines.push(`${k}: ${v}`);
  if (p.body && !p.noLength) lines.push(`Content-Length: ${p.body.length}`);
  lines.push('Connection: close', '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), p.body ?? Buffer.alloc(0)]);
}

interface Route {
  method: 'get' | 'post';
  path: string;
  bodySchema?: Record<string, unknown>;
}

function routesOf(doc: Record<string, any>): Route[] {
  const out: Route[] = [];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, any>)) {
    for (const method of ['get', 'post'] as const) {
      const op = ops[method];
      if (!op) continue;
      const schema = op.requestBody?.content?.['application/json']?.schema;
      out.push({ method, path, ...(schema ? { bodySchema: schema } : {}) });
    }
  }
  for (const path of ['/livez', '/readyz']) out.push({ method: 'get', path });
  return out;
}

const idemKey = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{8,40}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'a b', 'x'.repeat(256), 'ключ', 'k\u0001') },
);

export function requestArbitrary(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const ctx: SchemaContext = { components: t.openapi.components?.schemas ?? {} };
  const routes = routesOf(t.openapi);
  const jobRef = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...(t.jobRefs.length ? t.jobRefs : ['job_00000000000000000000000000'])) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...(t.foreignJobRefs.length ? t.foreignJobRefs : ['job_11111111111111111111111111'])),
    },
    { weight: 2, arbitrary: fc.stringMatching(/^job_[0-9A-Z]{26}$/) },
    {
      weight: 2,
      arbitrary: fc.constantFrom('%ZZ', '%E2%82', '%C0%AE', '%u002e', '..', '.', 'job_%FF', '%2F', 'JOB_x', ''),
    },
  );
  const objectId = fc.oneof(
    fc.constantFrom(...(t.objectIds.length ? t.objectIds : ['obj_00000000000000000000000000'])),
    fc.stringMatching(/^obj_[0-9A-Z]{26}$/),
    fc.constantFrom('%ZZ', 'obj_%80', '%00'),
  );
  const auth = fc.oneof(
    { weight: 8, arbitrary: fc.constant(`Bearer ${t.keys.full}`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `Bearer ${t.keys.readOnly}`,
        `Bearer ${t.keys.noFindingScope}`,
        `Bearer ${t.keys.revoked}`,
        `Bearer ${t.keys.other}`,
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        'Bearer',
        'Bearer ',
        `bearer ${t.keys.full}`,
        `Basic ${t.keys.full}`,
        `Bearer ${t.keys.full}x`,
        'Bearer lsk_nope',
        `Bearer  ${t.keys.full} `,
      ),
    },
  );
  const query = fc.oneof(
    fc.constant(''),
    fc
      .record(
        {
          limit: fc.oneof(
            fc.integer({ min: -5, max: 600 }).map(String),
            fc.constantFrom('abc', '1e3', '', '50&limit=2'),
          ),
          cursor: fc.oneof(
            fc.constant(undefined),
            fc.string({ maxLength: 80 }).map(encodeURIComponent),
            fc.constantFrom('AAAA', '%ZZ'),
          ),
          severity: fc.oneof(fc.constant(undefined), fc.constantFrom('info', 'low', 'high', 'critical', 'bogus')),
        },
        { requiredKeys: [] },
      )
      .map(
        (q) =>
          `?${Object.entries(q)
            .filter(([, v]) => v !== undefined)
            .map(([k, v]) => `${k}=${v}`)
            .join('&')}`,
      ),
  );

  const pathOf = (route: Route) =>
    fc
      .tuple(jobRef, objectId, query)
      .map(
        ([j, o, q]) => route.path.replace('{job_ref}', j).replace('{object_id}', o) + (route.method === 'get' ? q : ''),
      );

  // 1. The contract: a route of the document, a body from its schema (often a near-miss).
  const contract = fc
    .constantFrom(...routes)
    .chain((route) =>
      fc.tuple(
        fc.constant(route),
        pathOf(route),
        auth,
        idemKey,
        route.bodySchema ? bodyFor(route.bodySchema, ctx) : fc.option(anyJson, { nil: undefined }),
      ),
    )
    .map(([route, target, a, key, body]): FuzzRequest => {
      const headers: Array<[string, string]> = [];
      if (a) headers.push(['Authorization', a]);
      if (route.method === 'post') headers.push(['Idempotency-Key', key]);
      const hasBody = body !== undefined && route.method === 'post';
      if (hasBody) headers.push(['Content-Type', 'application/json']);
      return {
        kind: 'contract',
        method: route.method.toUpperCase(),
        bytes: encode({
          method: route.method.toUpperCase(),
          target,
          headers,
          ...(hasBody ? { body: Buffer.from(JSON.stringify(body)) } : {}),
        }),
      };
    });

  const anyRoute = fc.constantFrom(...routes).chain((r) => pathOf(r));
  const base = (
    method: string,
    target: string,
    extra: Array<[string, string]> = [],
    body?: Buffer,
    noLength = false,
  ): FuzzRequest => ({
    kind: '',
    method,
    bytes: encode({
      method,
      target,
      headers: [
        ['Authorization', `Bearer ${t.keys.full}`],
        ['Idempotency-Key', `fz-${Math.random().toString(36).slice(2)}`],
        ...extra,
      ],
      ...(body ? { body } : {}),
      noLength,
    }),
  });
  const post = (path = '/v2/lookups/mac') =>
    fc.constantFrom(
      path,
      '/v2/lookups/dns',
      '/v2/lookups/domain',
      '/v2/scans',
      '/v2/lookups/web',
      '/v2/jobs/job_00000000000000000000000000/cancel',
    );

  // 2. Nesting: arrays and objects far deeper than any schema.
  const nesting = fc.tuple(post(), fc.integer({ min: 30, max: 8000 }), fc.boolean()).map(([path, depth, obj]) => {
    const body = obj
      ? `{"value":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`
      : `${'['.repeat(depth)}${']'.repeat(depth)}`;
    return { ...base('POST', path, [['Content-Type', 'application/json']], Buffer.from(body)), kind: 'nesting' };
  });

  // 3. Encodings: percent-garbage in paths, odd Content-Encoding and charsets.
  const encodings = fc.oneof(
    fc
      .tuple(
        anyRoute,
        fc.constantFrom('%', '%Z', '%ZZ', '%E2%82', '%C0%AE', '%u002e', '%2e%2e', '%00', '%FF%FE', '%F0%9F'),
      )
      .map(([p, junk]) => ({ ...base('GET', p.replace(/job_[0-9A-Z]{26}/, junk)), kind: 'encoding' })),
    fc
      .tuple(
        post(),
        fc.constantFrom('gzip', 'GZIP', 'deflate', 'br', 'x-unknown', 'gzip, br', 'identity', ' gzip ', 'compress', ''),
        fc.boolean(),
      )
      .map(([p, enc, valid]) => {
        const json = Buffer.from('{"value":"F4:F5:E8:12:34:56"}');
        return {
          ...base(
            'POST',
            p,
            [
              ['Content-Type', 'application/json'],
              ['Content-Encoding', enc],
            ],
            valid ? json : Buffer.from('not compressed at all'),
          ),
          kind: 'encoding',
        };
      }),
    fc
      .tuple(
        post(),
        fc.constantFrom(
          'application/json; charset=utf-8',
          'application/json; charset=latin1',
          'application/json; charset=bogus',
          'text/plain',
          'application/jsonx',
          'APPLICATION/JSON',
          'application/json;;;',
          '*/*',
          'multipart/form-data; boundary=x',
        ),
      )
      .map(([p, ct]) => ({
        ...base('POST', p, [['Content-Type', ct]], Buffer.from('{"value":"F4:F5:E8:12:34:56"}')),
        kind: 'encoding',
      })),
  );

  // 4. Header bytes: control characters, odd names, duplicates, request ids, huge values.
  const headerBytes = fc
    .tuple(
      anyRoute,
      fc.oneof(
        fc.tuple(
          fc.constantFrom(
            'X-Fuzz',
            'X-Request-Id',
            'Idempotency-Key',
            'Authorization',
            'Content-Type',
            'Accept',
            'Expect',
            'Transfer-Encoding',
            'Content-Length',
            'Host',
          ),
          fc.string({ unit: 'binary', maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, '')),
        ),
        fc.tuple(
          fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map((s) => s.replace(/[\r\n:]/g, '') || 'X'),
          fc.string({ maxLength: 20 }),
        ),
        fc.tuple(
          fc.constant('X-Big'),
          fc.integer({ min: 4000, max: 70_000 }).map((n) => 'a'.repeat(n)),
        ),
        fc.tuple(
          fc.constant('X-Request-Id'),
          fc.constantFrom('req_custom-1', 'x'.repeat(129), 'with space', '\u00e9', ''),
        ),
        fc.tuple(fc.constant('Expect'), fc.constantFrom('100-continue', 'teapot', '')),
      ),
    )
    .map(([p, [k, v]]) => ({ ...base('GET', p, [[k, v]]), kind: 'header' }));

  // 5. Sizes: around the 64 KiB limit, lengths that disagree with the body.
  const sizes = fc.oneof(
    fc.tuple(post(), fc.integer({ min: 60_000, max: 140_000 })).map(([p, n]) => ({
      ...base('POST', p, [['Content-Type', 'application/json']], Buffer.from(`{"value":"${'a'.repeat(n)}"}`)),
      kind: 'size',
    })),
    fc
      .tuple(
        post(),
        fc.constantFrom<Array<[string, string]>>(
          [
            ['Content-Length', '2'],
            ['Transfer-Encoding', 'chunked'],
          ],
          [
            ['Content-Length', '3'],
            ['Content-Length', '4'],
          ],
          [['Content-Length', '-1']],
          [['Content-Length', '1x']],
          [['Transfer-Encoding', 'gzip']],
          [['Content-Length', '2']],
        ),
      )
      .map(([p, hs]) => ({
        ...base('POST', p, [['Content-Type', 'application/json'], ...hs], Buffer.from('{}'), true),
        kind: 'size',
      })),
  );

  // 6. Methods, on real paths.
  const methods = fc
    .tuple(fc.constantFrom(...METHODS), anyRoute)
    .map(([m, p]) => ({ ...base(m, m === 'CONNECT' ? '127.0.0.1:22' : p), kind: 'method' }));

  // 7. Path forms: slashes, dots, case, length, absolute-form, asterisk.
  const paths = fc
    .oneof(
      anyRoute.map((p) => p.replace(/\//g, '//')),
      anyRoute.map((p) => `${p}/`),
      anyRoute.map((p) => p.toUpperCase()),
      anyRoute.map((p) => p.replace('/v2/', '/v2/./x/../')),
      fc.integer({ min: 100, max: 12_000 }).map((n) => `/v2/jobs/${'a'.repeat(n)}`),
      anyRoute.map((p) => `http://fuzz.lab.test${p}`),
      fc.constantFrom(
        '*',
        '/',
        '',
        '/v3/products',
        '/v2',
        '/V2/OPENAPI.JSON',
        '/v2/products?x=%ZZ',
        '/v2/products#frag',
        '/%2e%2e/etc/passwd',
      ),
      fc.tuple(anyRoute, interestingString).map(([p, s]) => `${p}?q=${encodeURIComponent(s)}`),
    )
    .chain((target) =>
      fc.constantFrom('GET', 'POST').map((m) => ({ ...base(m, target.replace(/ /g, '%20') || '/'), kind: 'path' })),
    );

  return fc.oneof(
    { weight: 40, arbitrary: contract },
    { weight: 6, arbitrary: nesting },
    { weight: 12, arbitrary: encodings },
    { weight: 12, arbitrary: headerBytes },
    { weight: 8, arbitrary: sizes },
    { weight: 10, arbitrary: methods },
    { weight: 12, arbitrary: paths },
  );
}

// ---- checking --------------------------------------------------------------------------------

export function check(req: FuzzRequest, reply: RawReply): string[] {
  const problems: string[] = [];
  if (reply.silent || reply.status === 0) return ['no reply at all'];
  const rid = reply.headers['x-request-id'];
  if (!rid) problems.push('no X-Request-Id');
  if (LEAKS.test(reply.body)) problems.push(`internal detail in the body: ${LEAKS.exec(reply.body)![0]}`);
  if (reply.status >= 500) {
    let code: string | undefined;
    try {
      code = JSON.parse(reply.body).error?.code;
    } catch {
      code = undefined;
    }
    if (!(reply.status === 503 && EXPLAINED_503.includes(code as ErrorCode)))
      problems.push(`unexplained ${reply.status} ${code ?? ''}`.trim());
  }
  if (reply.status >= 400 && req.method !== 'HEAD') {
    let env: { error?: { code?: string; status?: number; requestId?: string; message?: unknown; retryable?: unknown } };
    try {
      env = JSON.parse(reply.body);
    } catch {
      return [...problems, 'error body is not JSON'];
    }
    const e = env.error;
    if (!e || typeof e.message !== 'string' || typeof e.retryable !== 'boolean')
      problems.push('not the CONTRACT §3 envelope');
    else if (!errorCodes.includes(e.code as ErrorCode)) problems.push(`undocumented code ${e.code}`);
    else {
      if (errorRegistry[e.code as ErrorCode].status !== reply.status || e.status !== reply.status)
        problems.push(`code ${e.code} with status ${reply.status}`);
      if (e.requestId !== rid) problems.push('error.requestId differs from X-Request-Id');
    }
  }
  return problems;
}

function printable(b: Buffer | string, max = 300): string {
  const s = typeof b === 'string' ? b : b.toString('latin1');
  return JSON.stringify(s.length > max ? `${s.slice(0, max)}…(${s.length} bytes)` : s);
}

export interface FuzzOptions {
  requests: number;
  seed: number;
  concurrency?: number;
  timeoutMs?: number;
  onProgress?: (done: number) => void;
}

export async function runFuzz(t: FuzzTarget, o: FuzzOptions): Promise<FuzzStats> {
  const arb = requestArbitrary(t);
  const stats: FuzzStats = { requests: 0, byStatus: {}, byCode: {}, byKind: {}, unexplained5xx: 0, violations: [] };
  const CHUNK = 250;
  const concurrency = o.concurrency ?? 8;
  for (let start = 0; start < o.requests; start += CHUNK) {
    const batch = fc.sample(arb, { seed: o.seed + start, numRuns: Math.min(CHUNK, o.requests - start) });
    let next = 0;
    const worker = async () => {
      while (next < batch.length) {
        const i = next++;
        const req = batch[i]!;
        const index = start + i;
        let reply: RawReply;
        try {
          reply = await rawRequest(t.port, req.bytes, o.timeoutMs ?? 10_000);
        } catch (err) {
          stats.violations.push({
            index,
            kind: req.kind,
            problem: (err as Error).message,
            request: printable(req.bytes),
            reply: '',
          });
          continue;
        }
        stats.requests++;
        stats.byStatus[reply.status] = (stats.byStatus[reply.status] ?? 0) + 1;
        stats.byKind[req.kind] = (stats.byKind[req.kind] ?? 0) + 1;
        if (reply.status >= 400) {
          try {
            const code = JSON.parse(reply.body).error?.code ?? '(none)';
            stats.byCode[code] = (stats.byCode[code] ?? 0) + 1;
          } catch {
            stats.byCode['(not json)'] = (stats.byCode['(not json)'] ?? 0) + 1;
          }
        }
        const problems = check(req, reply);
        if (problems.some((p) => p.startsWith('unexplained'))) stats.unexplained5xx++;
        for (const problem of problems) {
          stats.violations.push({
            index,
            kind: req.kind,
            problem,
            request: printable(req.bytes),
            reply: `${reply.status} ${printable(reply.body, 200)}`,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    o.onProgress?.(Math.min(start + CHUNK, o.requests));
  }
  return stats;
}

/** Lines of the service's log that hold a secret (a key, the pepper, the cursor secret). */
export function secretsInLogs(lines: readonly string[], secrets: readonly string[]): string[] {
  const hits: string[] = [];
  for (const line of lines) {
    for (const secret of secrets) {
      // The key's random part: even a partial echo of it must not be logged.
      const needle = secret.startsWith('lsk_') ? secret.slice(4, 24) : secret;
      if (needle && line.includes(needle)) hits.push(line.slice(0, 300));
    }
  }
  return hits;
}
