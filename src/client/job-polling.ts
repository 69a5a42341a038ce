// Polls a job until it is terminal, sleeping the job's own `pollAfterMs` between reads (the
// service's hint, not a client constant). A terminal job is returned as it is: cancelled, failed,
// unavailable and partial are outcomes to report, not exceptions and never a success.
import { setTimeout as sleep } from 'node:timers/promises';
import { LssTransportError } from './errors.ts';
import type { Envelope, JobStatus, TerminalJobState } from './types.ts';

export interface WaitOptions {
  signal?: AbortSignal | undefined;
  /** Called with every status read, the first one included (progress display). */
  onUpdate?: ((job: JobStatus) => void) | undefined;
  /** Give up waiting (error `wait_timeout`) after this long; the job itself goes on. */
  timeoutMs?: number | undefined;
}

export interface JobOutcome<R = Record<string, unknown>> {
  job: JobStatus;
  status: TerminalJobState;
  /** True only for `completed` with complete coverage. */
  complete: boolean;
  /** The product envelope of an async lookup (`job.result`), null for scans or without one. */
  envelope: Envelope<R> | null;
}

/** A floor against a zero or missing hint, so a misbehaving reply cannot make a busy loop. */
const MIN_POLL_MS = 50;

export function jobOutcome<R>(job: JobStatus): JobOutcome<R> {
  if (!job.terminal) throw new Error(`job ${job.jobRef} is not terminal (${job.status})`);
  return {
    job,
    status: job.status as TerminalJobState,
    complete: job.status === 'completed' && job.coverage.complete,
    envelope: (job.result as Envelope<R> | null) ?? null,
  };
}

export async function pollUntilTerminal(
  read: () => Promise<JobStatus>,
  first: JobStatus | undefined,
  opts: WaitOptions = {},
): Promise<JobStatus> {
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let job = first ?? (await read());
  for (;;) {
    opts.onUpdate?.(job);
    if (job.terminal) return job;
    const wait = Math.max(job.pollAfterMs, MIN_POLL_MS);
    if (Date.now() + wait > deadline) {
      throw new LssTransportError({
        code: 'wait_timeout',
        message: `job ${job.jobRef} still ${job.status} after ${opts.timeoutMs} ms`,
        status: 0,
        retryable: true,
      });
    }
    try {
      await sleep(wait, undefined, opts.signal ? { signal: opts.signal } : undefined);
    } catch (cause) {
      throw new LssTransportError({
        code: 'aborted',
        message: 'aborted by the caller',
        status: 0,
        retryable: false,
        cause,
      });
    }
    job = await read();
  }
}
