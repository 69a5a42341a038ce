// A check's implementation loaded at its first call. The check lists (name, lane, timeout) are
// imported by every lane and by the orchestrator (timeouts); their implementations pull in
// mailauth, parse5, tough-cookie, the TLS and SMTP machinery. Behind lazy(), a process loads an
// implementation only when it runs that check: a lane never loads another lane's libraries, the
// orchestrator none (test/integration/role-modules.test.ts checks it).

/** The function `load` resolves to, imported on the first call (later calls reuse it). */
export function lazy<F extends (...args: never[]) => Promise<unknown>>(load: () => Promise<F>): F {
  let loaded: Promise<F> | undefined;
  const call = async (...args: Parameters<F>) => {
    loaded ??= load();
    const fn = await loaded;
    return fn(...args);
  };
  return call as unknown as F;
}
