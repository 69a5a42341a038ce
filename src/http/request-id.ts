// X-Request-Id: echo a sane incoming one (1-128 visible ASCII), else mint req_ + 26 base32.
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { publicId } from '../contract/ids.ts';
import { RequestContext } from './context.ts';

const VISIBLE = /^[\x21-\x7e]{1,128}$/;

export function requestId(log: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && VISIBLE.test(incoming) ? incoming : publicId('req');
    res.locals = new RequestContext(id, log, performance.now());
    res.setHeader('X-Request-Id', id);
    next();
  };
}
