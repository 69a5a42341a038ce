// fastify-style drift test: the errors registry, docs/api.md and the OpenAPI document must agree.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { errorRegistry, errorCodes } from '../../src/contract/errors.ts';
import { buildOpenApi } from '../../src/routes/openapi/openapi.ts';
import { products } from '../../src/products/registry.ts';

const apiMd = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const doc = buildOpenApi(products) as Record<string, any>;

describe('contract drift', () => {
  it('docs/api.md lists every registry code with its status, retryability and Retry-After, and nothing else', () => {
    const rows = [...apiMd.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (yes|no) \| ([^|]+) \|/gm)];
    const documented = new Map(
      rows.map((m) => [m[1]!, { status: Number(m[2]), retryable: m[3] === 'yes', retryAfter: m[4]!.trim() }]),
    );
    expect([...documented.keys()].sort()).toEqual([...errorCodes].sort());
    for (const code of errorCodes) {
      const spec = errorRegistry[code];
      const d = documented.get(code)!;
      expect(d.status, code).toBe(spec.status);
      expect(d.retryable, code).toBe(spec.retryable);
      expect(d.retryAfter, code).toBe({ always: 'always', when_known: 'when known', never: '—' }[spec.retryAfter]);
    }
  });

  it('the OpenAPI error envelope enumerates exactly the registry codes', () => {
    const codeEnum = doc.components.schemas.ErrorEnvelope.properties.error.properties.code.enum;
    expect([...codeEnum].sort()).toEqual([...errorCodes].sort());
    expect(Object.keys(doc['x-error-registry']).sort()).toEqual([...errorCodes].sort());
  });

  it('every documented error response names codes whose registry status matches that response', () => {
    for (const [path, ops] of Object.entries(doc.paths as Record<string, any>)) {
      for (const [method, op] of Object.entries(ops as Record<string, any>)) {
        for (const [status, resp] of Object.entries(op.responses as Record<string, any>)) {
          for (const code of resp['x-error-codes'] ?? []) {
            expect(errorRegistry[code as keyof typeof errorRegistry].status, `${method} ${path} ${code}`).toBe(
              Number(status),
            );
          }
        }
      }
    }
  });

  it('every registered product has a path in the OpenAPI document and a row in docs/api.md', () => {
    for (const p of products) {
      expect(doc.paths[p.path]?.post?.operationId).toBe(p.id);
      expect(apiMd).toContain(`| ${p.id} | POST ${p.path} |`);
    }
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });
});
