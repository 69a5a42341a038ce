// A chain of handlers mounted as one Express handler. Express 5's router dispatches each layer of
// a route through its own machinery (a layer match, a `next` closure, a promise check per step);
// the admission chain has a dozen steps, and that dispatch showed in the admission profile. This
// runs them in order with one `next` per request and the same rules Express applies to a route's
// handlers: a thrown error or a rejected promise goes to the error handler, `next(err)` too,
// `next()` moves on, and the chain ends where a handler answers without calling `next`.
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export function sequence(handlers: readonly RequestHandler[]): RequestHandler {
  if (handlers.length === 0) throw new Error('sequence needs at least one handler');
  return (req: Request, res: Response, done: NextFunction) => {
    let i = 0;
    const fail = (err: unknown) => done(err ?? new Error('Rejected promise'));
    const next = (err?: unknown) => {
      // 'route' and 'router' skip the rest of this route, as Express does.
      if (err === 'route' || err === 'router') return done(err);
      if (err) return done(err);
      if (i === handlers.length) return done();
      const handler = handlers[i++]!;
      let ret: unknown;
      try {
        ret = handler(req, res, next);
      } catch (e) {
        return fail(e);
      }
      if (ret !== null && typeof ret === 'object' && typeof (ret as Promise<void>).then === 'function')
        (ret as Promise<void>).then(undefined, fail);
    };
    next();
  };
}
