// Which result notices a lane's results stream still holds for a consumer group: the entries not
// delivered yet (after the group's last-delivered id) and those delivered but not acknowledged
// (the group's pending list: an orchestrator's batcher holds its notices there until their batch
// commits, and a dead orchestrator's wait there to be reclaimed). A finished task whose notice
// is among them is queued, not lost: re-publishing it (the reconciler's job for lost notices)
// would only add a duplicate, up to 500 a tick while applying lags (issue 31).
//
// Every command names the one stream, so the whole read stays in the lane's slot on a cluster.
import type { RedisClient } from '../redis/client.ts';
import { fieldsToRecord } from './stream-ids.ts';

/** Entries read per XRANGE page, and pending entries looked up per pipeline. */
const PAGE = 1000;

type Range = Array<[string, string[] | null]>;

/**
 * The task ids of the notices `stream` holds unacknowledged for `group`, or null when more than
 * `maxEntries` would have to be read (a backlog that long: leave the question for a later pass).
 * A missing stream or group holds nothing (everything it had is lost, e.g. Redis was flushed);
 * a missing group with entries holds them all.
 */
export async function queuedNoticeTasks(
  redis: RedisClient,
  stream: string,
  group: string,
  maxEntries: number,
): Promise<Set<number> | null> {
  const tasks = new Set<number>();
  const add = (entries: Range) => {
    for (const [, fields] of entries) {
      const n = Number(fieldsToRecord(fields).task);
      if (Number.isSafeInteger(n) && n > 0) tasks.add(n);
    }
  };
  let info: unknown[][];
  try {
    info = (await redis.xinfo('GROUPS', stream)) as unknown[][];
  } catch (err) {
    if (/no such key/i.test((err as Error).message)) return tasks;
    throw err;
  }
  const g = info.map((row) => fieldsToRecord(row.map(String))).find((x) => x.name === group);
  const pending = g ? Number(g.pending) : 0;
  if (pending > maxEntries) return null;
  let read = 0;
  if (pending > 0) {
    const ids = ((await redis.xpending(stream, group, '-', '+', pending)) as Array<[string, ...unknown[]]>).map(
      ([id]) => id,
    );
    for (let i = 0; i < ids.length; i += PAGE) {
      const p = redis.pipeline();
      for (const id of ids.slice(i, i + PAGE)) p.xrange(stream, id, id);
      for (const [err, entries] of (await p.exec()) ?? []) {
        if (err) throw err;
        add(entries as Range);
      }
    }
    read += ids.length;
  }
  // Undelivered: everything after the last-delivered id (all of the stream without a group).
  let from = g ? `(${g['last-delivered-id']}` : '-';
  for (;;) {
    const page = (await redis.xrange(stream, from, '+', 'COUNT', PAGE)) as Range;
    add(page);
    read += page.length;
    if (page.length < PAGE) return tasks;
    if (read > maxEntries) return null;
    from = `(${page[page.length - 1]![0]}`;
  }
}
