// Gives the operating system back the heap pages V8 keeps after a burst (issue 31: the web role's
// RSS rose 14-20 MB a worker after a MySQL fault and stayed, failing the soak's flatness target).
// A fault holds requests in flight long enough to be promoted; when they die, the GC frees their
// pages into V8's page pool, which stays resident until a memory-reducing collection. V8 starts
// one by itself only when the process allocates little (its memory reducer), so a worker serving
// steady traffic never does: the pool is a high-water mark of the worst burst so far. Seen in a
// stand-alone script with the web role's options: 58 MB freed by a full GC stayed resident
// (RSS 164 MB) for as long as it ran; one last-resort collection took it to 105 MB in 33 ms.
//
// So each worker watches what it holds beyond the V8 heap (RSS minus the heap's physical size:
// the pool, and native memory) against the lowest it has seen since its last reclaim; when that
// has grown by `thresholdBytes` and no reclaim ran for `minIntervalMs`, it asks V8 for a
// last-resort collection, which releases the pool. It needs `--expose-gc` (the Procfile gives it
// to the web role only); without it nothing happens. Bounded cost: one pause a minute at most,
// and only after a burst; but not a small one: 33 ms for the stand-alone burst, 186-237 ms on
// average (up to 500 ms) in full soaks on 2 busy cores, as it is at least two atomic full
// collections (docs/operations.md); `lss_memory_reclaim_pause_seconds` shows it. (At most one
// every 5 minutes was tried first: in a MySQL-only soak a worker stepped up again at the next
// restart, 1.5 minutes after its reclaim, and kept that step while the interval held it back.)
// The web role's young generation is fixed at its size (--min-semi-space-size=16): a last-resort
// collection otherwise shrinks it to its minimum and it regrows over the next minute or two, about
// 28 MB a worker that looked given back and was not (docs/operations.md, "Memory after a burst").
import v8 from 'node:v8';
import client from 'prom-client';
import type { Logger } from 'pino';
import { registry } from './metrics.ts';

type Gc = (options: { type: 'major'; flavor: 'last-resort'; execution: 'sync' }) => void;

const reclaims = new client.Counter({
  name: 'lss_memory_reclaims_total',
  help: 'Last-resort V8 collections run to give back heap pages kept after a burst (src/memory-reclaim.ts)',
  registers: [registry],
});
const reclaimedBytes = new client.Counter({
  name: 'lss_memory_reclaimed_bytes_total',
  help: 'Resident memory given back by those collections (RSS before minus after)',
  registers: [registry],
});
// The collection is synchronous: every request on that worker waits for it, so its pause is a
// latency an operator must be able to see beside what it gave back.
const reclaimPause = new client.Histogram({
  name: 'lss_memory_reclaim_pause_seconds',
  help: 'Pause of each of those collections (the worker serves nothing meanwhile)',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2],
  registers: [registry],
});

export interface ReclaimOptions {
  /** Growth of RSS beyond the V8 heap over the lowest seen that triggers a reclaim. */
  thresholdBytes: number;
  /** At most one reclaim per this long. */
  minIntervalMs: number;
}

export const RECLAIM_DEFAULTS: ReclaimOptions = { thresholdBytes: 16 * 2 ** 20, minIntervalMs: 60_000 };

/** What the process holds beyond the V8 heap: RSS minus the heap's physical size. */
function slackBytes(): number {
  return process.memoryUsage.rss() - v8.getHeapStatistics().total_physical_size;
}

export interface Reclaimer {
  /** Looks once; reclaims when due. Returns the RSS given back, or null when it did not run. */
  check(now?: number): number | null;
  stop(): void;
}

/**
 * A watcher of one process's kept heap pages. `everyMs` > 0 checks on an unref'd timer; tests
 * call `check` themselves.
 */
export function startReclaimer(
  log: Pick<Logger, 'info'>,
  { everyMs = 10_000, ...options }: Partial<ReclaimOptions> & { everyMs?: number } = {},
): Reclaimer {
  const { thresholdBytes, minIntervalMs } = { ...RECLAIM_DEFAULTS, ...options };
  const gc = (globalThis as { gc?: Gc }).gc;
  let floor = slackBytes();
  let last = Number.NEGATIVE_INFINITY;
  const check = (now = Date.now()): number | null => {
    const slack = slackBytes();
    floor = Math.min(floor, slack);
    if (!gc || slack - floor < thresholdBytes || now - last < minIntervalMs) return null;
    last = now;
    const before = process.memoryUsage.rss();
    const t0 = performance.now();
    gc({ type: 'major', flavor: 'last-resort', execution: 'sync' });
    const pause = performance.now() - t0;
    const pauseMs = Math.round(pause);
    const after = process.memoryUsage.rss();
    const given = Math.max(0, before - after);
    // What is left is the new baseline: native memory that grew under load is no burst's, and a
    // reclaim that gave nothing back must not run again every interval.
    floor = slackBytes();
    reclaims.inc();
    reclaimedBytes.inc(given);
    reclaimPause.observe(pause / 1000);
    log.info(
      { rssBeforeMb: Math.round(before / 2 ** 20), rssAfterMb: Math.round(after / 2 ** 20), pauseMs },
      'gave back heap pages kept after a burst',
    );
    return given;
  };
  const timer = everyMs > 0 ? setInterval(() => check(), everyMs) : undefined;
  timer?.unref();
  return { check, stop: () => clearInterval(timer) };
}
