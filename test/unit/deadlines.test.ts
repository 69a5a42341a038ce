// src/jobs/admission/deadlines.ts: one interval keeps every inline execution's deadline.
import { describe, expect, it } from 'vitest';
import { Deadlines } from '../../src/jobs/admission/deadlines.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Deadlines', () => {
  it('aborts what is still running after its deadline, and only that', async () => {
    const d = new Deadlines(50, 10);
    const late = d.start();
    const done = d.start();
    d.end(done);
    await sleep(20);
    const fresh = d.start();
    expect(late.signal.aborted).toBe(false);
    await sleep(60);
    expect(late.signal.aborted).toBe(true);
    expect((late.signal.reason as Error).message).toBe('deadline');
    expect(done.signal.aborted).toBe(false);
    // Started 20 ms later: its deadline is 20 ms later too.
    await sleep(40);
    expect(fresh.signal.aborted).toBe(true);
  });

  it('keeps working after it went idle', async () => {
    const d = new Deadlines(20, 5);
    d.end(d.start());
    await sleep(30);
    const again = d.start();
    await sleep(60);
    expect(again.signal.aborted).toBe(true);
  });
});
