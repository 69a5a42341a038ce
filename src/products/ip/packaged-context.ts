// Loads the shipped IP context dataset (context-package.ts) as its compact table (asn-table.ts):
// from the cache file of this dataset version when there is one (~17 MB read, 10–25 ms), else
// after building that file in a short-lived child process (build-context-table.ts, ~1–2 s), so the
// CSV parse and its garbage never live in a serving process. Imported only by the context lane, at
// the first lookup that asks for context: a process that answers none never loads the module.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { deserializeAsnTable, type AsnTable } from './asn-table.ts';
import {
  PACKAGED_FAILURE_TTL_MS,
  contextCachePaths,
  contextPackage,
  notePackagedFailure,
  type ContextPackage,
} from './context-package.ts';

const BUILDER = fileURLToPath(new URL('./build-context-table.ts', import.meta.url));
const BUILD_TIMEOUT_MS = 120_000;
/** The serialised table is ~17 MB; the builder writes it to stdout only when no cache path is writable. */
const MAX_TABLE_BYTES = 128 * 1024 * 1024;

export class PackagedContextError extends Error {}

async function readCached(paths: readonly string[], version: string): Promise<AsnTable | null> {
  for (const p of paths) {
    let bytes: Buffer;
    try {
      bytes = await readFile(p);
    } catch {
      continue;
    }
    try {
      const table = deserializeAsnTable(bytes);
      if (table.version === version) return table;
    } catch {
      // torn or foreign: the builder replaces it
    }
  }
  return null;
}

function runBuilder(paths: readonly string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BUILDER, ...paths],
      { encoding: 'buffer', maxBuffer: MAX_TABLE_BYTES, timeout: BUILD_TIMEOUT_MS, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (err) reject(new PackagedContextError(`building the IP context table failed: ${err.message} ${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

export interface LoadedContext {
  table: AsnTable;
  origin: 'cache' | 'built' | 'built_unsaved';
}

/** The table of `pkg`: cached, or built by the child process (to the first writable path, else its stdout). */
export async function loadOrBuildContextTable(
  pkg: ContextPackage,
  paths: readonly string[] = contextCachePaths(pkg),
): Promise<LoadedContext> {
  const cached = await readCached(paths, pkg.version);
  if (cached) return { table: cached, origin: 'cache' };
  const out = await runBuilder(paths);
  if (out.length > 0) return { table: deserializeAsnTable(out), origin: 'built_unsaved' };
  const built = await readCached(paths, pkg.version);
  if (!built) throw new PackagedContextError('the IP context table builder left no readable table');
  return { table: built, origin: 'built' };
}

let pending: Promise<AsnTable> | undefined;
let failedAt: number | undefined;

/** The shipped dataset's table, loaded once per process (concurrent first callers share the load). */
export function packagedContextTable(log: Logger): Promise<AsnTable> {
  if (pending && (failedAt === undefined || Date.now() - failedAt < PACKAGED_FAILURE_TTL_MS)) return pending;
  const pkg = contextPackage();
  if (!pkg) return Promise.reject(new PackagedContextError('the IP context packages are not installed'));
  const t0 = performance.now();
  failedAt = undefined;
  const load = loadOrBuildContextTable(pkg).then(
    ({ table, origin }) => {
      notePackagedFailure(undefined);
      log.info({ version: table.version, origin, ms: Math.round(performance.now() - t0) }, 'ip context table loaded');
      return table;
    },
    (err: unknown) => {
      failedAt = Date.now();
      notePackagedFailure(failedAt);
      throw err;
    },
  );
  pending = load;
  return load;
}
