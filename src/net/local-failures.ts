// Failures of this process, not of the target. A connection that could not be opened because this
// process ran out of file descriptors (EMFILE), the machine out of them (ENFILE) or of buffers or
// memory (ENOBUFS, ENOMEM) says nothing about the target: nothing was sent to it. EADDRNOTAVAIL is
// left out although exhausted local ports give it: a host without working IPv6 may answer a
// connect to a target's IPv6 address with it too, and that is a fact of the path to the target.
// Left to the checks, such a failure reads as the target's fact ("connection failed", an https
// chain that failed, a port that did not answer): a finding or a limitation that blames the target
// for our own shortage, and for an active port check, a port reported as not open that we never
// tried. So the outbound guard notes every such failure in the work it runs in
// (the lane's check, through an AsyncLocalStorage like the DNS answer cuts of
// special-use-resolver.ts), and the lane does not record that check's result: the task is given
// back for another attempt, and after LANE_MAX_DELIVERIES it fails as ours (dead_lettered), which
// the job's coverage reports (workers/lane-runner/execute-check.ts, runner.ts).
// The same holds for our own database connections (DESIGN.md, "Congestion is ours"): a connection
// MySQL refused (1040 too many connections, the account's limit) or one our pool could not give in
// time is our shortage of the connection budget, never the task's outcome. The lane runner retries
// such a statement with backoff while it holds the task's entry (no delivery or attempt is spent)
// and gives the entry back at shutdown (runner.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import { connectionShortage } from '../resilience/dependency-errors.ts';

export { connectionShortage };

/** errno codes that describe this machine's resources, never the peer. */
export const LOCAL_ERRNOS: ReadonlySet<string> = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']);

/** The local errno behind `err` (it, or a cause up to four deep), or null. */
export function localErrno(err: unknown): string | null {
  for (let e: unknown = err, i = 0; e && typeof e === 'object' && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && LOCAL_ERRNOS.has(code)) return code;
  }
  return null;
}

/**
 * What a piece of work (a lane's check) has met of our own shortages: the failure codes, and how
 * many of its connections wait in our own queue for a place at their address right now
 * (./address-slots.ts): a check whose timeout fires while one does ran out of time in our process,
 * not at the target (workers/lane-runner/execute-check.ts).
 */
export interface WorkLedger {
  codes: Set<string>;
  waiting: number;
}

/** A connection left unattempted: it waited too long in our own queue (./slot-failure.ts), or its check's time ran out meanwhile. */
export const OUTBOUND_NOT_ATTEMPTED = 'OUTBOUND_NOT_ATTEMPTED';

const failuresOfTheWork = new AsyncLocalStorage<WorkLedger>();

export function newWorkLedger(): WorkLedger {
  return { codes: new Set(), waiting: 0 };
}

/** Notes `err` in the work it happened in when it is a failure of this process; returns its code. */
export function noteIfLocal(err: unknown): string | null {
  const code = localErrno(err);
  if (code) failuresOfTheWork.getStore()?.codes.add(code);
  return code;
}

/**
 * Notes a failure of this process that is no errno (a DNS question never sent: our congestion,
 * workers/lane-runner/not-asked-retry.ts) in the work it happened in.
 */
export function noteLocalFailure(code: string): void {
  failuresOfTheWork.getStore()?.codes.add(code);
}

const NOTHING = () => {};

/** A connection of the current work starts waiting in our own queue; the returned function ends the wait (once). */
export function enterLocalWait(): () => void {
  const ledger = failuresOfTheWork.getStore();
  if (!ledger) return NOTHING;
  ledger.waiting++;
  let left = false;
  return () => {
    if (left) return;
    left = true;
    ledger.waiting--;
  };
}

/**
 * Runs `work` and returns, with its outcome, the local errno codes the outbound guard met while it
 * ran. The work's error is returned rather than thrown, so the caller sees the codes either way.
 * `ledger`: the caller's, to read while the work runs.
 */
export async function collectLocalFailures<T>(
  work: () => Promise<T>,
  ledger: WorkLedger = newWorkLedger(),
): Promise<{ ok: true; value: T; codes: string[] } | { ok: false; error: unknown; codes: string[] }> {
  try {
    const value = await failuresOfTheWork.run(ledger, work);
    return { ok: true, value, codes: [...ledger.codes] };
  } catch (error) {
    return { ok: false, error, codes: [...ledger.codes] };
  }
}

/** This process's failure behind `err`, if it is one: a local errno or a database connection shortage. */
export function localFailure(err: unknown): string | null {
  return localErrno(err) ?? connectionShortage(err);
}
