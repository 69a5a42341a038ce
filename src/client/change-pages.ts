// Reading a job's changes (CONTRACT §13): GET /v2/jobs/{job_ref}/changes, cursor after cursor.
// The comparison is made when the job ends, so a running job's list is empty with a cursor to
// continue from: without `wait` the iteration stops there (nothing yet), with `wait` it reads
// again until the job is terminal. The end is `nextCursor: null` on a terminal job.
import { setTimeout as sleep } from 'node:timers/promises';
import { LssTransportError } from './errors.ts';
import { gatherPages } from './page-iterator.ts';
import type { ChangeKind, ChangeMark, ChangePage } from './types.ts';

export interface ChangePageOptions {
  /** Items per page (service default 50, at most 500). */
  limit?: number | undefined;
  cursor?: string | undefined;
  /** Which marks (default: every mark but unchanged). */
  change?: readonly ChangeMark[] | undefined;
  kind?: ChangeKind | undefined;
  /** Keep reading until the job is terminal (default: stop at "nothing yet"). */
  wait?: boolean | undefined;
  /** Pause between reads of a running job (default 1000 ms). */
  pollMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

export async function* iterateChangePages(
  read: (cursor: string | undefined) => Promise<ChangePage>,
  opts: ChangePageOptions = {},
): AsyncGenerator<ChangePage> {
  let cursor = opts.cursor;
  for (;;) {
    const page = await read(cursor);
    yield page;
    const next = page.page.nextCursor;
    if (next === null) return;
    cursor = next;
    if (page.terminal) continue;
    if (!opts.wait) return;
    try {
      await sleep(opts.pollMs ?? 1000, undefined, opts.signal ? { signal: opts.signal } : undefined);
    } catch (cause) {
      throw new LssTransportError({
        code: 'aborted',
        message: 'aborted by the caller',
        status: 0,
        retryable: false,
        cause,
      });
    }
  }
}

/** Every change read, with the view of the last page. */
export interface CollectedChanges {
  jobRef: string;
  jobStatus: ChangePage['jobStatus'];
  terminal: boolean;
  baseline: ChangePage['baseline'];
  /** The key lacks finding:read: finding items were left out. */
  findingsOmitted: boolean;
  items: ChangePage['items'];
  nextCursor: string | null;
}

export async function collectChangePages(pages: AsyncIterable<ChangePage>): Promise<CollectedChanges> {
  const { last, items } = await gatherPages(pages);
  return {
    jobRef: last.jobRef,
    jobStatus: last.jobStatus,
    terminal: last.terminal,
    baseline: last.baseline,
    findingsOmitted: last.findingsOmitted,
    items,
    nextCursor: last.page.nextCursor,
  };
}
