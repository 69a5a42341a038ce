// The soak's second tenant (test/bench/soak.ts), in a process of its own at the lowest CPU
// priority: DNS lookups of random names at a steady rate, under a zone that answers in the
// `control` slices and under the dead zone in the `dead` slices and the whole soak, nothing in the
// `none` slices.
//
// Why a process of its own: the main tenant's latency is read on the soak's main thread, which
// also runs the lab's servers; with this tenant's 50 requests a second on that same event loop
// (sending, parsing the replies, the garbage of both) the main tenant's replies waited behind
// them there, in the bench, and the isolation figure charged that wait to the service. Why the
// lowest priority (SCHED_IDLE where `chrt` can set it, else nice 19; the soak's idlePriority says
// why nice 19 alone is not enough): a real tenant's client runs on its own machine; here it shares
// the service's two cores, and its CPU (about 3-4 % of a core at 50/s) is no cost of the
// service's. It still gets every idle cycle, so its rate holds; it yields to the roles when they
// are runnable.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { type SliceClock, sliceAt } from './soak-slices.ts';

export interface TenantOptions {
  base: string;
  apiKey: string;
  path: string;
  ratePerS: number;
  /** Date.now() at soak time 0. */
  clock0: number;
  slices: SliceClock;
  controlZone: string;
  deadZone: string;
  requestTimeoutMs: number;
}

/** One answer, as the soak records it (times in ms of soak time). */
export interface TenantSample {
  product: 'dns';
  sent: number;
  answered: number;
  status: number;
  code: string | null;
}

const o = JSON.parse(process.env.SOAK_TENANT ?? 'null') as TenantOptions;
const agent = new Agent({ connections: 64, keepAliveTimeout: 10_000 });
const now = () => performance.timeOrigin + performance.now() - o.clock0;
const samples: TenantSample[] = [];
const inFlight = new Set<Promise<void>>();
const run = randomBytes(3).toString('hex');
let sending = true;
process.on('message', (m) => {
  if (m === 'stop') sending = false;
});
// The soak gone (crashed, killed) must not leave this process sending.
process.on('disconnect', () => process.exit(0));

function fire(n: number): void {
  const sent = now();
  // Before t = 0 the slice says which zone; the soak itself is all dead zone.
  const zone = sent < 0 && sliceAt(o.slices, sent).condition === 'control' ? o.controlZone : o.deadZone;
  const p = request(`${o.base}${o.path}`, {
    method: 'POST',
    dispatcher: agent,
    headers: {
      authorization: `Bearer ${o.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': `soak-${randomBytes(12).toString('hex')}`,
    },
    body: JSON.stringify({ value: `n${n}-${run}.${zone}` }),
    headersTimeout: o.requestTimeoutMs,
    bodyTimeout: o.requestTimeoutMs,
  })
    .then(async (res) => {
      const text = await res.body.text();
      let code: string | null = null;
      try {
        code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
      } catch {
        // not JSON: no code
      }
      return { status: res.statusCode, code };
    })
    .catch(() => ({ status: 0, code: null }))
    .then(({ status, code }) => {
      samples.push({ product: 'dns', sent, answered: now(), status, code });
      inFlight.delete(p);
    });
  inFlight.add(p);
}

// Paced over the time it is active (not the `none` slices), so that a slice never starts with the
// catch-up of the one before.
let activeMs = 0;
let sentCount = 0;
let last = performance.now();
while (sending) {
  const tick = performance.now();
  const t = now();
  if (t >= -o.slices.mixMs && (t >= 0 || sliceAt(o.slices, t).condition !== 'none')) {
    activeMs += tick - last;
    while (sentCount < Math.floor((activeMs / 1000) * o.ratePerS)) fire(sentCount++);
  }
  last = tick;
  await sleep(10);
}
await Promise.race([Promise.allSettled([...inFlight]), sleep(o.requestTimeoutMs)]);
await agent.close();
process.send!(samples, () => process.disconnect());
