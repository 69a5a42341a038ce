// The pool task table: every CPU-bound parser a lane may run in its piscina pool (parse-worker.ts)
// or inline when the pool is off. Products register their own tasks (their pool-entry.ts); the
// shared certificate parser comes from src/net/. Plain functions of JSON-serialisable input and
// output: they cross a thread boundary.
import { parseCertificate } from '../../src/net/certificate.ts';
import { mailPoolTasks } from '../../src/products/mail/pool-entry.ts';
import { webPoolTasks } from '../../src/products/web/pool-entry.ts';

export const parseTasks = {
  parseCertificate,
  ...webPoolTasks,
  ...mailPoolTasks,
} as const;
export type ParseTask = keyof typeof parseTasks;
