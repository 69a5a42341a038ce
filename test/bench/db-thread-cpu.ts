// The MariaDB CPU one database's connections cost: MariaDB serves each connection on its own
// thread (one-thread-per-connection, its default), and information_schema.PROCESSLIST names that
// thread's OS id (TID), so /proc/<server>/task/<tid>/stat says what the server spent on our
// statements. On a machine whose MariaDB also serves other work (other engineers' tests) the
// server's own CPU counts theirs too; this figure counts ours only (InnoDB's background threads,
// purge, flushing and the log writer, are not in it: they serve every database at once).
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { createDb, type DbHandle } from '../../src/db/database.ts';

const CLK_TCK = 100; // USER_HZ on Linux

/** utime + stime of one thread of `pid`, in seconds; null when the thread is gone. */
export function threadCpuSeconds(pid: number, tid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return null;
  }
}

/**
 * Samples the threads serving `databaseUrl`'s connections (except its own) every `everyMs`: a
 * thread's CPU counts from the first sample that saw it serving this database (a thread MariaDB
 * reuses from its cache brings the CPU of its earlier connections, which is not ours) to the last.
 * A connection opened and closed between two samples is missed: pools keep theirs open.
 */
export class DbThreadCpu {
  readonly #serverPids: number[];
  readonly #db: DbHandle;
  readonly #first = new Map<number, number>();
  readonly #last = new Map<number, number>();
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> | undefined;
  /** Most connections to this database seen in one sample (issue 48: connections against the budget). */
  #peak = 0;
  /** The server's Connection_errors_max_connections at the first sample (refusals are counted server-wide). */
  #refusedAtStart: number | null = null;

  /** `serverPids`: the machine's MariaDB servers (the one serving the database has its threads). */
  constructor(serverPids: number[], databaseUrl: string) {
    this.#serverPids = serverPids;
    this.#db = createDb(databaseUrl, { connectionLimit: 1 });
  }

  start(everyMs = 1000): void {
    this.#timer = setInterval(() => void this.sample(), everyMs);
  }

  sample(): Promise<void> {
    this.#sampling ??= (async () => {
      try {
        const r = await sql<{ tid: number }>`SELECT TID AS tid FROM information_schema.PROCESSLIST
          WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`.execute(this.#db.db);
        this.#peak = Math.max(this.#peak, r.rows.length);
        this.#refusedAtStart ??= await this.#refused();
        for (const { tid } of r.rows) {
          const s = this.#serverPids.map((pid) => threadCpuSeconds(pid, Number(tid))).find((x) => x !== null) ?? null;
          if (s === null) continue;
          if (!this.#first.has(Number(tid))) this.#first.set(Number(tid), s);
          this.#last.set(Number(tid), s);
        }
      } catch {
        // a missed sample: the next one reads the same threads
      } finally {
        this.#sampling = undefined;
      }
    })();
    return this.#sampling;
  }

  async #refused(): Promise<number | null> {
    const r = await sql<{ Value: string }>`SHOW GLOBAL STATUS LIKE 'Connection_errors_max_connections'`.execute(
      this.#db.db,
    );
    return r.rows[0] ? Number(r.rows[0].Value) : null;
  }

  /**
   * Stops sampling (after one last sample) and gives the seconds spent, the threads seen, the most
   * connections to the database at once, and the connections the server refused meanwhile
   * (`max_connections` reached; server-wide, whatever database they were for).
   */
  async stop(): Promise<{ s: number; threads: number; peakConnections: number; refused: number | null }> {
    clearInterval(this.#timer);
    await this.#sampling;
    await this.sample();
    const refusedNow = await this.#refused().catch(() => null);
    await this.#db.close();
    let s = 0;
    for (const [tid, last] of this.#last) s += last - this.#first.get(tid)!;
    const refused = refusedNow !== null && this.#refusedAtStart !== null ? refusedNow - this.#refusedAtStart : null;
    return { s, threads: this.#last.size, peakConnections: this.#peak, refused };
  }
}
