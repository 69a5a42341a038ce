// `node --import ./test/bench/rss/module-log-hook.ts …`: appends the URL of every module this
// process loads (main thread and worker threads, ESM and CommonJS alike) to
// $LSS_MODULE_LOG_DIR/<pid>-<threadId>.txt, one per line. Used by `npm run bench:rss -- --modules`
// and by the test that checks which libraries each role loads at rest. Never loaded in production.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import path from 'node:path';
import { threadId } from 'node:worker_threads';

const dir = process.env.LSS_MODULE_LOG_DIR;
if (dir) {
  const file = path.join(dir, `${process.pid}-${threadId}.txt`);
  registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      appendFileSync(file, `${url}\n`);
      return loaded;
    },
  });
}
