// A lane's parse pool threads load only the parsers of the tasks they run (issue 19): a thread that
// ran a web task has parse5 and tough-cookie but not mailauth, one that ran a mail task the
// reverse, and the lane's main thread neither. In a child process with the module log hook
// (test/bench/rss/module-log-hook.ts), so this process's own imports do not count.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

const probe = `
const { createParsePool } = await import(${JSON.stringify(`${root}/workers/pool/parse-pool.ts`)});
for (const [task, payload] of [
  ['assessWebEvidence', { url: 'https://lab.test/', host: 'lab.test', http: null, https: null, primary: null, preflight: null }],
  ['mailMtaStsTxt', { domain: 'lab.test', snapshot: { queries: [] } }],
]) {
  const pool = createParsePool(1);
  await pool.run(task, payload).catch(() => {}); // the payload does not matter, the modules it loads do
  await pool.destroy();
}
`;

describe('parse pool threads', () => {
  it('load the parsers of their own tasks only', { timeout: 60_000 }, () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lss-pool-modules-'));
    try {
      // A file, not -e: worker threads inherit the hook through execArgv, which -e would spoil.
      const script = path.join(dir, 'probe.mjs');
      writeFileSync(script, probe);
      execFileSync(process.execPath, ['--import', './test/bench/rss/module-log-hook.ts', script], {
        cwd: root,
        env: { ...process.env, LSS_MODULE_LOG_DIR: dir },
        encoding: 'utf8',
      });
      const threads = new Map<number, string[]>();
      for (const f of readdirSync(dir).filter((n) => n.endsWith('.txt'))) {
        const tid = Number(/-(\d+)\.txt$/.exec(f)![1]);
        threads.set(tid, readFileSync(path.join(dir, f), 'utf8').split('\n'));
      }
      const has = (tid: number, lib: string) => threads.get(tid)!.some((u) => u.includes(`/node_modules/${lib}/`));
      const libs = (tid: number) => ['parse5', 'tough-cookie', 'mailauth'].filter((l) => has(tid, l));
      // thread 0 is the main thread; the two pools' threads follow in the order they ran
      expect([...threads.keys()].sort()).toEqual([0, 1, 2]);
      expect(libs(0)).toEqual([]);
      expect(libs(1)).toEqual(['parse5', 'tough-cookie']);
      expect(libs(2)).toEqual(['mailauth']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
