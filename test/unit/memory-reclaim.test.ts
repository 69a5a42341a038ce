// src/memory-reclaim.ts in a real V8: heap pages freed after a burst stay resident through an
// ordinary major GC, and the reclaimer's last-resort collection gives them back. Children run
// with the web role's heap options, so the figures are V8's own, not a model of them.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProcfile } from '../../ops/procfile.ts';

const root = path.resolve(import.meta.dirname, '../..');
const webArgs = readProcfile(root).find((r) => r.name === 'web')!.args;
/** The web role's heap options, as the Procfile gives them (so this test follows a change there). */
const heapFlags = webArgs.filter(
  (a) => a.startsWith('--max-') || a.startsWith('--min-') || a.startsWith('--v8-pool-size'),
);
interface Out {
  exposed: boolean;
  start: number;
  peak: number;
  afterGc: number;
  given: number | null;
  afterReclaim: number;
  pauses: number;
  pauseS: number;
}
function run(flags: string[]): Out {
  const out = execFileSync(process.execPath, [...flags, ...heapFlags, 'test/helpers/reclaim-child.ts'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return JSON.parse(out.trim().split('\n').pop()!) as Out;
}

describe('memory reclaim', () => {
  it('the web role runs with --expose-gc (without it the reclaim does nothing)', () => {
    expect(webArgs).toContain('--expose-gc');
    expect(heapFlags.some((a) => a.startsWith('--max-semi-space-size'))).toBe(true);
  });

  it('gives back the pages an ordinary collection keeps after a burst', () => {
    const r = run(['--expose-gc']);
    expect(r.exposed).toBe(true);
    // The burst's pages are still resident after the ordinary major GC: what the web role saw.
    expect(r.afterGc - r.start).toBeGreaterThan(30);
    // The reclaimer's collection gives most of them back.
    expect(r.given).not.toBeNull();
    expect(r.afterGc - r.afterReclaim).toBeGreaterThan(20);
    // Its pause is observed once, and is a real collection's (not zero, well under a second).
    expect(r.pauses).toBe(1);
    expect(r.pauseS).toBeGreaterThan(0);
    expect(r.pauseS).toBeLessThan(1);
  });

  it('does nothing without --expose-gc', () => {
    const r = run([]);
    expect(r.exposed).toBe(false);
    expect(r.given).toBeNull();
    expect(r.pauses).toBe(0);
  });
});
