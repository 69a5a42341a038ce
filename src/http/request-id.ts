// X-Request-Id: echo a sane incoming one (1-128 visible ASCII), else mint req_ + 26 base32.
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { publicId } from '../lib/ids.ts';
import { state } from './context.ts';

const VISIBLE = /^[\x21-\x7e]{1,128}$/;

export function requestId(log: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const id = incoming && VISIBLE.test(incoming) ? incoming : publicId('req');
    const s = state(res);
    s.requestId = id;
    s.log = log.child({ requestId: id });
    res.setHeader('X-Request-Id', id);
    next();
  };
}
