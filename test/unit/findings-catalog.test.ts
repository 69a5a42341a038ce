import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findingCatalog } from '../../src/products/findings-catalog.ts';
import { SEVERITIES } from '../../src/contract/tasks.ts';

const md = readFileSync(new URL('../../docs/findings.md', import.meta.url), 'utf8');

describe('finding catalog', () => {
  it('docs/findings.md lists exactly the catalog codes with their severity, confidence and product', () => {
    const rows = [...md.matchAll(/^\| `([a-z0-9_]+)` \| ([a-z]+) \| ([a-z]+) \| ([a-z0-9.]+) \|/gm)];
    const documented = new Map(rows.map((m) => [m[1]!, { severity: m[2], confidence: m[3], product: m[4] }]));
    expect([...documented.keys()].sort()).toEqual(findingCatalog.map((f) => f.code).sort());
    for (const f of findingCatalog)
      expect(documented.get(f.code), f.code).toEqual({
        severity: f.severity,
        confidence: f.confidence,
        product: f.product,
      });
  });

  it('codes are unique and severities valid', () => {
    const codes = findingCatalog.map((f) => f.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const f of findingCatalog) expect(SEVERITIES).toContain(f.severity);
  });
});
