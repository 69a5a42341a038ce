// A child for test/unit/memory-reclaim.test.ts: a burst of promoted objects, let go and collected
// by an ordinary major GC (as V8 does by itself), then one reclaimer check. Prints JSON.
import { startReclaimer } from '../../src/memory-reclaim.ts';
import { registry } from '../../src/metrics.ts';

const mb = () => Math.round(process.memoryUsage.rss() / 2 ** 20);
const gc = (globalThis as { gc?: (o?: unknown) => void }).gc;
const reclaimer = startReclaimer({ info: () => {} }, { everyMs: 0, thresholdBytes: 8 * 2 ** 20, minIntervalMs: 0 });
const start = mb();
// About 60 MB of small objects held across several scavenges (so they are promoted), as requests
// held in flight through a fault are.
let held: unknown[] | null = [];
for (let i = 0; i < 15_000; i++)
  held.push({ i, rows: Array.from({ length: 40 }, (_, j) => ({ j, s: `row ${i} ${j}` })) });
const peak = mb();
held = null;
gc?.({ type: 'major' });
await new Promise((r) => setTimeout(r, 200));
const afterGc = mb();
const given = reclaimer.check();
const afterReclaim = mb();
// What an operator sees of it: the pause histogram's count and sum.
const pause = (await registry.getSingleMetric('lss_memory_reclaim_pause_seconds')!.get()).values as Array<{
  metricName?: string;
  value: number;
}>;
const pauses = pause.find((v) => v.metricName === 'lss_memory_reclaim_pause_seconds_count')?.value ?? 0;
const pauseS = pause.find((v) => v.metricName === 'lss_memory_reclaim_pause_seconds_sum')?.value ?? 0;
process.stdout.write(
  `${JSON.stringify({ exposed: Boolean(gc), start, peak, afterGc, given, afterReclaim, pauses, pauseS })}\n`,
);
