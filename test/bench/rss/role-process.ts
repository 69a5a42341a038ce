// One Procfile role started the way `npm run up` starts it (ops/procfile.ts: this Node, the
// Procfile's own Node options), waited for until it is ready, then measured at rest: VmRSS and
// thread count of the process (and of the web role's cluster workers) from /proc, and, when asked,
// the modules each of its threads loaded (./module-log-hook.ts). Used by `npm run bench:rss` and by
// test/integration/role-modules.test.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcfileRole } from '../../../ops/procfile.ts';

/** Libraries and datasets a role should load only if it uses them (module URL fragments). */
export const WATCHED: Record<string, string> = {
  'oui-data': '/node_modules/oui-data/',
  libphonenumber: '/node_modules/libphonenumber-js/',
  mailauth: '/node_modules/mailauth/',
  parse5: '/node_modules/parse5/',
  'tough-cookie': '/node_modules/tough-cookie/',
  undici: '/node_modules/undici/',
  piscina: '/node_modules/piscina/',
  'ip dataset': '/src/products/ip/packaged-context.ts',
  express: '/node_modules/express/',
};

// A port free on every address, outside the ephemeral range (test/helpers/processes.ts says why).
export { freePort } from '../../helpers/processes.ts';

export interface ProcStatus {
  pid: number;
  rssMB: number;
  threads: number;
}

export function procStatus(pid: number): ProcStatus | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? Number.NaN);
    return { pid, rssMB: Math.round(field('VmRSS') / 102.4) / 10, threads: field('Threads') };
  } catch {
    return null;
  }
}

/** Direct children of `pid` (the web primary's cluster workers). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export interface StartedRole {
  role: ProcfileRole;
  child: ChildProcess;
  output(): string;
  /** Module URLs per process id, per thread id (empty unless started with modules: true). After stop(): what was loaded until then. */
  modules(): Map<number, Map<number, string[]>>;
  stop(): Promise<void>;
}

export interface StartOptions {
  root: string;
  env: Record<string, string | undefined>;
  /** Log the modules each thread loads (adds --import of the hook). */
  modules?: boolean;
  webWorkers: number;
  port: number;
  readyTimeoutMs?: number;
}

/** Starts the role and resolves once it is ready: a lane or orchestrator logged that it started; web answers /livez with every worker forked. */
export async function startRole(role: ProcfileRole, o: StartOptions): Promise<StartedRole> {
  const logDir = o.modules ? mkdtempSync(path.join(os.tmpdir(), 'lss-modules-')) : null;
  const hook = path.join(import.meta.dirname, 'module-log-hook.ts');
  const args = logDir ? ['--import', hook, ...role.args] : role.args;
  const env: Record<string, string | undefined> = {
    ...o.env,
    LOG_LEVEL: 'info',
    PORT: String(o.port),
    WEB_CONCURRENCY: String(o.webWorkers),
    ...(logDir ? { LSS_MODULE_LOG_DIR: logDir } : {}),
  };
  const child = spawn(role.file, args, { cwd: o.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const append = (b: Buffer) => {
    out += b.toString('utf8');
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let collected = new Map<number, Map<number, string[]>>();
  const collect = () => {
    const byPid = new Map<number, Map<number, string[]>>();
    if (!logDir) return byPid;
    for (const f of readdirSync(logDir)) {
      const m = /^(\d+)-(\d+)\.txt$/.exec(f);
      if (!m) continue;
      const pid = Number(m[1]);
      if (!byPid.has(pid)) byPid.set(pid, new Map());
      byPid.get(pid)!.set(Number(m[2]), readFileSync(path.join(logDir, f), 'utf8').split('\n').filter(Boolean));
    }
    return byPid;
  };
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(20_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      }
      if (logDir) {
        collected = collect();
        rmSync(logDir, { recursive: true, force: true });
      }
    })();
    return stopping;
  };
  /** What was loaded so far (while running), or until the stop. */
  const modules = () => (stopping !== undefined ? collected : collect());
  const started: StartedRole = { role, child, output: () => out, modules, stop };
  const deadline = Date.now() + (o.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`${role.name} exited before it was ready:\n${out.slice(-3000)}`);
    }
    if (role.name === 'web') {
      const listening = (out.match(/"msg":"web worker listening"/g) ?? []).length;
      if (listening >= o.webWorkers && childPids(child.pid!).length >= o.webWorkers) {
        try {
          if ((await fetch(`http://127.0.0.1:${o.port}/livez`)).ok) break;
        } catch {
          // not yet
        }
      }
    } else if (/"msg":"(orchestrator started|lane runner started)"/.test(out)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${role.name} was not ready in time:\n${out.slice(-3000)}`);
    }
    await sleep(100);
  }
  return started;
}
