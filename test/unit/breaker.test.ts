// The shared circuit breaker (src/resilience/breaker.ts) on a fake clock: it opens after N
// consecutive failures, probes on its own schedule while open (jittered, one at a time, bounded),
// closes on the first good probe or on a real success, and stop() ends every timer.
import { describe, expect, it } from 'vitest';
import { Breaker, jittered, type BreakerClock, type BreakerState } from '../../src/resilience/breaker.ts';

/** A clock whose time moves only by advance(); due timers run in order, microtasks settle between. */
class FakeClock implements BreakerClock {
  #now = 0;
  #seq = 0;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  #seed: number;

  constructor(seed = 1) {
    this.#seed = seed;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.#seq;
    this.timers.set(id, { at: this.#now + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** A seeded LCG: the jitter is reproducible. */
  random(): number {
    this.#seed = (this.#seed * 1103515245 + 12345) % 2 ** 31;
    return this.#seed / 2 ** 31;
  }

  /** Runs every timer due within `ms`, in time order, letting promises settle after each. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      await settle();
      const next = [...this.timers].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!next) break;
      this.timers.delete(next[0]);
      this.#now = next[1].at;
      next[1].fn();
    }
    this.#now = end;
    await settle();
  }

  /** When the next timer is due, relative to now (null: none). */
  nextIn(): number | null {
    const ats = [...this.timers.values()].map((t) => t.at);
    return ats.length ? Math.min(...ats) - this.#now : null;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

function breakerWith(clock: FakeClock, probe: (signal: AbortSignal) => Promise<boolean>, failuresToOpen = 3) {
  const changes: Array<[BreakerState, BreakerState]> = [];
  const b = new Breaker({
    name: 'test',
    failuresToOpen,
    probe,
    clock,
    onChange: (from, to) => changes.push([from, to]),
  });
  return { b, changes };
}

describe('Breaker', () => {
  it('opens after N consecutive failures; a success in between resets the count', () => {
    const clock = new FakeClock();
    const { b } = breakerWith(clock, async () => true, 3);
    b.failure();
    b.failure();
    b.success();
    b.failure();
    b.failure();
    expect(b.state).toBe('closed');
    expect(b.readiness()).toBe('ready');
    b.failure();
    expect(b.state).toBe('open');
    expect(b.readiness()).toBe('down');
  });

  it('with no traffic at all, a good probe makes it ready within 1.2 s of opening', async () => {
    const clock = new FakeClock();
    const { b, changes } = breakerWith(clock, async () => true, 1);
    b.failure();
    expect(b.readiness()).toBe('down');
    const due = clock.nextIn()!;
    expect(due).toBeGreaterThanOrEqual(800);
    expect(due).toBeLessThanOrEqual(1200);
    await clock.advance(1200);
    expect(b.readiness()).toBe('ready');
    expect(b.probes).toBe(1);
    expect(changes).toEqual([
      ['closed', 'open'],
      ['open', 'half_open'],
      ['half_open', 'closed'],
    ]);
    expect(clock.timers.size).toBe(0); // nothing runs while closed
  });

  it('a failing probe keeps it open and schedules the next one 0.8–1.2 s later, for as long as it fails', async () => {
    const clock = new FakeClock(7);
    let up = false;
    const { b } = breakerWith(clock, async () => up, 1);
    b.failure();
    const gaps: number[] = [];
    for (let i = 0; i < 20; i++) {
      const due = clock.nextIn()!;
      gaps.push(due);
      await clock.advance(due);
      expect(b.state).toBe('open');
    }
    expect(b.probes).toBe(20);
    for (const g of gaps) {
      expect(g).toBeGreaterThanOrEqual(800);
      expect(g).toBeLessThanOrEqual(1200);
    }
    expect(new Set(gaps).size).toBeGreaterThan(1); // jittered, not in lockstep
    up = true; // the dependency is back: ready within one more interval
    await clock.advance(1200);
    expect(b.readiness()).toBe('ready');
  });

  it('a probe that hangs is bounded by probeTimeoutMs and counts as a failure; only one probe runs at a time', async () => {
    const clock = new FakeClock();
    let running = 0;
    let maxRunning = 0;
    const b = new Breaker({
      name: 'hang',
      failuresToOpen: 1,
      probeTimeoutMs: 500,
      clock,
      probe: (signal) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        return new Promise<boolean>((resolve) => {
          signal.addEventListener('abort', () => {
            running--;
            resolve(true); // an answer after the timeout must not count
          });
        });
      },
    });
    b.failure();
    await clock.advance(1200 + 500);
    expect(b.probes).toBe(1);
    expect(b.state).toBe('open');
    expect(running).toBe(0); // the timed-out probe was aborted
    await clock.advance(10_000);
    expect(b.state).toBe('open');
    expect(maxRunning).toBe(1);
    expect(b.probes).toBeGreaterThanOrEqual(5);
    b.stop();
  });

  it('a probe that throws counts as a failure', async () => {
    const clock = new FakeClock();
    const { b } = breakerWith(
      clock,
      async () => {
        throw new Error('ECONNREFUSED');
      },
      1,
    );
    b.failure();
    await clock.advance(1200);
    expect(b.probes).toBe(1);
    expect(b.state).toBe('open');
    b.stop();
  });

  it('a real success while half-open closes it, and the late probe answer changes nothing', async () => {
    const clock = new FakeClock();
    let answer: (ok: boolean) => void = () => {};
    const b = new Breaker({
      name: 'late',
      failuresToOpen: 1,
      probeTimeoutMs: 5000,
      clock,
      probe: () =>
        new Promise<boolean>((resolve) => {
          answer = resolve;
        }),
    });
    b.failure();
    await clock.advance(1200);
    expect(b.state).toBe('half_open');
    b.success();
    expect(b.state).toBe('closed');
    answer(false);
    await clock.advance(0);
    expect(b.state).toBe('closed');
    expect(clock.timers.size).toBe(0);
  });

  it('failures while open change nothing: the probes alone decide', async () => {
    const clock = new FakeClock();
    const { b } = breakerWith(clock, async () => true, 2);
    b.failure();
    b.failure();
    const due = clock.nextIn();
    for (let i = 0; i < 50; i++) b.failure();
    expect(clock.nextIn()).toBe(due);
    await clock.advance(1200);
    expect(b.state).toBe('closed');
  });

  it('stop() clears the timers: no probe ever runs afterwards', async () => {
    const clock = new FakeClock();
    const { b } = breakerWith(clock, async () => true, 1);
    b.failure();
    expect(clock.timers.size).toBe(1);
    b.stop();
    expect(clock.timers.size).toBe(0);
    await clock.advance(60_000);
    expect(b.probes).toBe(0);
    expect(b.state).toBe('open');
    b.failure(); // nothing is scheduled by a stopped breaker
    expect(clock.timers.size).toBe(0);
  });

  it('verify() while closed: a failed probe opens it at once, a good one changes nothing; concurrent calls share one probe', async () => {
    const clock = new FakeClock();
    let up = true;
    let asked = 0;
    const { b, changes } = breakerWith(
      clock,
      async () => {
        asked++;
        return up;
      },
      20,
    );
    expect(await b.verify()).toBe(true);
    expect(b.state).toBe('closed');
    expect(clock.timers.size).toBe(0); // nothing scheduled while closed
    up = false;
    const [one, two] = await Promise.all([b.verify(), b.verify()]);
    expect([one, two]).toEqual([false, false]);
    expect(asked).toBe(2); // one probe for the two callers
    expect(b.verifications).toBe(2);
    expect(b.state).toBe('open');
    expect(changes).toEqual([['closed', 'open']]);
    // Open: verify asks nothing, the scheduled probes decide; they close it when it answers.
    expect(await b.verify()).toBe(false);
    expect(asked).toBe(2);
    up = true;
    await clock.advance(1200);
    expect(b.state).toBe('closed');
  });

  it('verify() is bounded by probeTimeoutMs: a hanging probe is a failed verification', async () => {
    const clock = new FakeClock();
    const b = new Breaker({
      name: 'verify-hang',
      failuresToOpen: 20,
      probeTimeoutMs: 500,
      clock,
      probe: (signal) => new Promise<boolean>((resolve) => signal.addEventListener('abort', () => resolve(true))),
    });
    const v = b.verify();
    await clock.advance(500);
    expect(await v).toBe(false);
    expect(b.state).toBe('open');
    b.stop();
  });

  it('retryAfterMs(): null while closed; while open the time to the next probe; while half-open the probe bound', async () => {
    const clock = new FakeClock(3);
    let answer: (ok: boolean) => void = () => {};
    const b = new Breaker({
      name: 'retry-after',
      failuresToOpen: 1,
      probeTimeoutMs: 700,
      clock,
      probe: () =>
        new Promise<boolean>((resolve) => {
          answer = resolve;
        }),
    });
    expect(b.retryAfterMs()).toBeNull();
    b.failure();
    const due = clock.nextIn()!;
    expect(b.retryAfterMs()).toBe(due);
    await clock.advance(300);
    expect(b.retryAfterMs()).toBe(due - 300);
    await clock.advance(due - 300); // the probe starts
    expect(b.state).toBe('half_open');
    expect(b.retryAfterMs()).toBe(700);
    await clock.advance(200);
    expect(b.retryAfterMs()).toBe(500);
    answer(false);
    await clock.advance(0);
    expect(b.state).toBe('open');
    expect(b.retryAfterMs()).toBe(clock.nextIn());
    b.success();
    expect(b.retryAfterMs()).toBeNull();
  });

  it('jittered() stays within ±jitter', () => {
    for (let i = 0; i < 1000; i++) {
      const v = jittered(1000, 0.2);
      expect(v).toBeGreaterThanOrEqual(800);
      expect(v).toBeLessThanOrEqual(1200);
    }
    expect(jittered(1000, 0)).toBe(1000);
  });
});

describe('observeBreakers: the operator sees a breaker open and close', () => {
  it('logs and counts open and close, not the probe flips in between, with how long it was down', async () => {
    const { observeBreakers } = await import('../../src/resilience/breaker-observer.ts');
    const client = (await import('prom-client')).default;
    const registry = new client.Registry();
    const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
    const stop = observeBreakers({
      registry,
      log: {
        warn: (obj, msg) => lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
        info: (obj, msg) => lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
      },
    });
    const clock = new FakeClock(7);
    let up = false;
    const b = new Breaker({ name: 'observed', failuresToOpen: 2, clock, probe: async () => up });
    try {
      b.failure();
      b.failure();
      const gauge = async () =>
        (await registry.getSingleMetric('lss_breaker_open')!.get()).values.find((v) => v.labels.breaker === 'observed')
          ?.value;
      expect(await gauge()).toBe(1);
      await clock.advance(3500); // about three failed probes: open → half_open → open, three times
      expect(b.probes).toBeGreaterThanOrEqual(2);
      up = true;
      await clock.advance(1500);
      expect(b.state).toBe('closed');
      expect(await gauge()).toBe(0);
      expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
      expect(lines[0]!.obj.breaker).toBe('observed');
      expect(lines[1]!.obj.downMs).toBeGreaterThanOrEqual(3500);
      const opened = await registry.getSingleMetric('lss_breaker_opened_total')!.get();
      expect(opened.values.find((v) => v.labels.breaker === 'observed')?.value).toBe(1);
    } finally {
      stop();
      b.stop();
    }
    // Unsubscribed: a later breaker's moves reach no one.
    const c = new Breaker({ name: 'after', failuresToOpen: 1, clock, probe: async () => true });
    c.failure();
    expect(lines).toHaveLength(2);
    c.stop();
  });
});
