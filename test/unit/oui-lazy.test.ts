// Every role imports the product registry; only the web role runs MAC lookups. The IEEE table
// (11 MB of heap) must not load with the registry, and must load when the web role warms it.
// In a child process: this file's own process may have loaded the table through other imports.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

const probe = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const loaded = () => Object.keys(require.cache).some((k) => k.includes('/node_modules/oui-data/'));
const { products } = await import('./src/products/registry.ts');
await import('./workers/start-lane-worker.ts');
const before = loaded();
for (const p of products) if (p.execute) p.warm?.();
const { matchIeeeRegistry } = await import('./src/products/mac/oui-registry.ts');
console.log(JSON.stringify({ before, after: loaded(), hit: matchIeeeRegistry('F4F5E8123456')?.organization ?? null }));
`;

describe('the IEEE OUI table', () => {
  it('is not loaded by importing the products and the lane worker, and is loaded by warm()', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: root, encoding: 'utf8' });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { before: boolean; after: boolean; hit: string | null };
    expect(r.before).toBe(false);
    expect(r.after).toBe(true);
    expect(r.hit).toMatch(/Google/i);
  });
});
