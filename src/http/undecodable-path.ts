// A path segment that is not valid percent-encoding (%ZZ, a truncated or overlong UTF-8 sequence,
// %u002e) cannot name any job or object: public ids are plain base32. Express would fail to
// decode it while matching a route, before any of our middleware runs, and answer 500. Instead,
// such a segment is replaced by a marker that decodes fine and matches no id, so the request runs
// the ordinary admission chain in CONTRACT §2 order: 401 without a key, then job_not_found /
// object_not_found (or route_not_found where no route takes a parameter there).
import type { RequestHandler } from 'express';

export const UNDECODABLE_SEGMENT = '%21undecodable';

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

export const replaceUndecodableSegments: RequestHandler = (req, _res, next) => {
  const url = req.url;
  if (!url.includes('%')) return next();
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const segments = path.split('/');
  if (segments.every(decodes)) return next();
  req.url = segments.map((s) => (decodes(s) ? s : UNDECODABLE_SEGMENT)).join('/') + (q < 0 ? '' : url.slice(q));
  next();
};
