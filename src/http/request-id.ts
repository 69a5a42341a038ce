// X-Request-Id: echo a sane incoming one (1-128 visible ASCII), else mint req_ + 26 base32.
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { publicId } from '../contract/ids.ts';
import { state } from './context.ts';

const VISIBLE = /^[\x21-\x7e]{1,128}$/;

export function requestId(log: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const id = incoming && VISIBLE.test(incoming) ? incoming : publicId('req');
    const s = state(res);
    s.requestId = id;
    // The request's child logger is made on first use: most requests log only their access line,
    // which app.ts writes through the parent with the id as a field (a child per request showed
    // in the admission profile).
    let child: Logger | undefined;
    Object.defineProperty(s, 'log', {
      get: () => (child ??= log.child({ requestId: id })),
      set: (l: Logger) => {
        child = l;
      },
      configurable: true,
      enumerable: true,
    });
    res.setHeader('X-Request-Id', id);
    next();
  };
}
