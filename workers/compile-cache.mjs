// `node --import=./workers/compile-cache.mjs …` (every long-running Procfile role): turns on Node's
// on-disk module compile cache before the role's first module is loaded. For a .ts module the cache
// holds the type-stripped source as well as V8's code cache, so a role started with a warm cache
// never loads the type stripper (amaro, a WebAssembly build of swc, ~20 MB per process and per
// pool thread) and skips parsing: measured ~20 MB less RSS at rest per process (docs/operations.md,
// `npm run bench:rss`). No build step: the cache fills itself the first time a module is loaded
// and is keyed by the module's content and the Node version, so an edited file is simply compiled
// again. It lives in $NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache; if it cannot be used
// Node carries on without it. This file is JavaScript because a .ts file here would load the very
// stripper it exists to avoid.
import module from 'node:module';

const enabled = module.enableCompileCache?.();
if (enabled?.directory) {
  // Worker threads (the lanes' parse pool) and cluster workers inherit it through the environment.
  process.env.NODE_COMPILE_CACHE = enabled.directory;
  // Node writes the cache at exit; writing it once start-up is over too keeps it when a process is
  // killed without one (a first start after a deploy then warms the cache for every later one).
  setTimeout(() => module.flushCompileCache?.(), 30_000).unref();
}
