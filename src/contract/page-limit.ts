// The `limit` query parameter every page route shares (CONTRACT §10): default 50, 1–500.
import { z } from 'zod';

export const PAGE_LIMIT_DEFAULT = 50;
export const PAGE_LIMIT_MAX = 500;

const LIMIT_MESSAGE = `must be an integer from 1 to ${PAGE_LIMIT_MAX}`;

/** Query strings are strings: digits only, so '1.5', '1e2', ' 5' and '' are all refused. */
export const limitParam = z
  .string()
  .regex(/^[0-9]{1,6}$/, LIMIT_MESSAGE)
  .transform(Number)
  .pipe(z.number().int().min(1, LIMIT_MESSAGE).max(PAGE_LIMIT_MAX, LIMIT_MESSAGE))
  .default(PAGE_LIMIT_DEFAULT);
