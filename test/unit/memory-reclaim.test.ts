// src/memory-reclaim.ts in a real V8: heap pages freed after a burst stay resident through an
// ordinary major GC, and the reclaimer's last-resort collection gives them back. Children run
// with the web role's heap options, so the figures are V8's own, not a model of them.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProcfile } from '../../ops/procfile.ts';
import { startReclaimer } from '../../src/memory-reclaim.ts';

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

// When it fires, on readings of our own (MB) and a clock of our own: the soak's memory trace, where
// a worker at a flat RSS was reclaimed every few minutes because its heap shrank into the page
// pool (what a reclaim empties, and steady traffic fills again within a minute).
describe('memory reclaim: when', () => {
  const MB = 2 ** 20;
  function watcher() {
    let t = 0;
    let mem = { rss: 166 * MB, heap: 150 * MB };
    let collections = 0;
    let afterCollect = { rss: 0, heap: 0 };
    const reclaimer = startReclaimer(
      { info: () => {} },
      {
        everyMs: 0,
        read: () => mem,
        clock: () => t,
        collect: () => {
          collections++;
          mem = afterCollect;
        },
      },
    );
    return {
      /** Readings every 10 s for `seconds`, from `from` to `to` linearly; the reclaims' results. */
      run(seconds: number, to: { rss: number; heap: number }) {
        const from = mem;
        const given: number[] = [];
        for (let s = 10; s <= seconds; s += 10) {
          t += 10_000;
          const f = s / seconds;
          mem = {
            rss: from.rss + (to.rss - from.rss) * f,
            heap: from.heap + (to.heap - from.heap) * f,
          };
          const g = reclaimer.check();
          if (g !== null) given.push(Math.round(g / MB));
        }
        return given;
      },
      mb: (rss: number, heap: number) => ({ rss: rss * MB, heap: heap * MB }),
      setAfterCollect(rss: number, heap: number) {
        afterCollect = { rss: rss * MB, heap: heap * MB };
      },
      collections: () => collections,
    };
  }

  it('not at a flat RSS, however far the heap shrinks into the pool', () => {
    const w = watcher();
    w.setAfterCollect(150, 140);
    expect(w.run(120, w.mb(166, 150))).toEqual([]); // settled at its working level
    expect(w.run(300, w.mb(166, 128))).toEqual([]); // slack +22 MB, RSS flat
    expect(w.collections()).toBe(0);
  });

  it('after a burst that left RSS up and the pages in the pool, once', () => {
    const w = watcher();
    w.setAfterCollect(158, 144);
    expect(w.run(120, w.mb(166, 150))).toEqual([]);
    // A fault's requests held in flight: the heap and the RSS up together, nothing kept yet.
    expect(w.run(20, w.mb(188, 172))).toEqual([]);
    // They die: the heap shrinks, the pages stay resident. One reclaim, 30 MB given back.
    expect(w.run(30, w.mb(188, 148))).toEqual([30]);
    expect(w.collections()).toBe(1);
    // Regrowth to the working level within a minute, then the heap shrinking into the pool
    // again at a flat RSS: no second reclaim (the floor is taken once regrown).
    expect(w.run(40, w.mb(167, 150))).toEqual([]);
    expect(w.run(600, w.mb(167, 126))).toEqual([]);
    expect(w.collections()).toBe(1);
    // The next burst is reclaimed again.
    expect(w.run(20, w.mb(190, 175))).toEqual([]);
    expect(w.run(30, w.mb(190, 150))).toEqual([32]);
  });

  it('not while the process settles after its start, however it grows', () => {
    const w = watcher();
    w.setAfterCollect(150, 140);
    expect(w.run(50, w.mb(200, 150))).toEqual([]); // slack +34 MB, within the first minute
    expect(w.collections()).toBe(0);
  });
});
