// Issue 23: a broken IP context dataset (IP_CONTEXT_DB) is not retried on every request, and a
// fixed file is picked up within 2 s by the path's breaker, without a restart and without a
// single lookup (it used to be remembered as failed for 60 s). An unchanged broken file is not
// read again.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  contextDataset,
  contextDatasetUsable,
  lookupContext,
  resetContextCache,
} from '../../src/products/ip/context-dataset.ts';

let dir: string;
const GOOD = '8.8.8.0\t8.8.8.255\t15169\tUS\tGOOGLE\n';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lss-ipctx-recovery-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeEach(() => resetContextCache());

async function within(ms: number, fn: () => boolean): Promise<number | null> {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    if (fn()) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 25));
  }
  return null;
}

describe('IP context dataset recovery', () => {
  it('a broken file makes the lane unusable; the fixed file is loaded within 2 s, without a lookup', async () => {
    const path = join(dir, 'broken-then-fixed.tsv');
    writeFileSync(path, 'not a dataset\n');
    expect(contextDatasetUsable(path)).toBe(true); // a readable file, not yet tried
    await expect(contextDataset(path)).rejects.toThrow(/no iptoasn TSV rows/);
    expect(contextDatasetUsable(path)).toBe(false);
    // Asked again: the failure is the answer, the file is not read per request.
    await expect(contextDataset(path)).rejects.toThrow(/no iptoasn TSV rows/);

    writeFileSync(path, GOOD);
    const after = await within(2500, () => contextDatasetUsable(path));
    expect(after, 'usable again without a lookup').not.toBeNull();
    expect(after!).toBeLessThanOrEqual(2000);
    const ds = await contextDataset(path);
    expect(lookupContext(ds, 4, BigInt(0x08080808))).toMatchObject({ asn: 15169, country: 'US' });
  });

  it('an unchanged broken file stays unusable (the probe does not read it again)', async () => {
    const path = join(dir, 'still-broken.tsv');
    writeFileSync(path, 'still not a dataset\n');
    await expect(contextDataset(path)).rejects.toThrow();
    expect(await within(2500, () => contextDatasetUsable(path))).toBeNull();
  });

  it('a missing file that appears is picked up', async () => {
    const path = join(dir, 'appears-later.tsv');
    await expect(contextDataset(path)).rejects.toThrow(/cannot read/);
    expect(contextDatasetUsable(path)).toBe(false);
    writeFileSync(path, GOOD);
    expect(await within(2500, () => contextDatasetUsable(path))).not.toBeNull();
  });
});
