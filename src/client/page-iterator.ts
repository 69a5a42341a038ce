// Cursor iteration over result and finding pages (CONTRACT §10). The client follows
// `page.nextCursor` verbatim and never invents offsets. The end is `terminal: true` with
// `nextCursor: null`; on a job that is still running, a page with nothing new (or a null cursor)
// means "nothing more yet": without `wait` the iteration ends there, with `wait` it sleeps and
// reads again from the last position. Items are yielded once each, even when a position has to
// be re-read (a null cursor on a running job gives nothing to continue from but the last one).
import { setTimeout as sleep } from 'node:timers/promises';
import { LssTransportError } from './errors.ts';
import type { FindingPage, ResultPage } from './types.ts';

export type AnyPage = ResultPage | FindingPage;

export interface PageOptions {
  /** Items per page (service default 50, at most 500). */
  limit?: number | undefined;
  /** Start from a cursor a previous iteration returned. */
  cursor?: string | undefined;
  /** Keep reading until the job is terminal (default: stop at "nothing more yet"). */
  wait?: boolean | undefined;
  /** Pause between reads of a running job that had nothing new (default 1000 ms). */
  pollMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

export const itemId = (item: AnyPage['items'][number]): string =>
  'findingId' in item ? item.findingId : item.objectId;

export async function* iteratePages<P extends AnyPage>(
  read: (cursor: string | undefined) => Promise<P>,
  opts: PageOptions = {},
): AsyncGenerator<P> {
  const seen = new Set<string>();
  let cursor = opts.cursor;
  for (;;) {
    const page = await read(cursor);
    const fresh = page.items.filter((item) => {
      const id = itemId(item);
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    }) as P['items'];
    yield { ...page, items: fresh };
    const next = page.page.nextCursor;
    if (next === null && page.terminal) return;
    if (next !== null) cursor = next;
    // Something new and somewhere to go on from: read on at once.
    if (fresh.length > 0 && next !== null) continue;
    if (page.terminal) continue; // terminal with a cursor: follow it to the end
    if (!opts.wait) return; // running and nothing more yet
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

/** Every item of every page, with the view of the last page (its status, coverage, limitations). */
export interface Collected<P extends AnyPage> {
  jobRef: string;
  jobStatus: P['jobStatus'];
  terminal: boolean;
  coverage: P['coverage'];
  limitations: P['limitations'];
  items: P['items'];
  /** Where to continue later (null once the job is terminal and everything was read). */
  nextCursor: string | null;
}

/** Every page's items in order, and the last page read (its status and cursor speak for the whole). */
export async function gatherPages<P extends { items: readonly unknown[] }>(
  pages: AsyncIterable<P>,
): Promise<{ last: P; items: P['items'][number][] }> {
  let last: P | undefined;
  const items: P['items'][number][] = [];
  for await (const page of pages) {
    items.push(...page.items);
    last = page;
  }
  if (!last) throw new Error('no page was read');
  return { last, items };
}

export async function collectPages<P extends AnyPage>(pages: AsyncIterable<P>): Promise<Collected<P>> {
  const { last, items } = await gatherPages(pages);
  return {
    jobRef: last.jobRef,
    jobStatus: last.jobStatus,
    terminal: last.terminal,
    coverage: last.coverage,
    limitations: last.limitations,
    items: items as P['items'],
    nextCursor: last.page.nextCursor,
  };
}
