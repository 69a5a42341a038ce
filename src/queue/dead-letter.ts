// The dead-letter stream: an audit trail of entries given up on, with where they came from. The
// durable consequence (a task marked failed/dead_lettered) is the caller's to record first.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import type { Delivery } from './stream-consumer.ts';
import { DEAD_LETTER_MAXLEN, streams } from './streams.ts';

/**
 * Adds the dead-letter XADD to the MULTI that acknowledges the entry: to the dead letter in the
 * stream's own slot (a MULTI on Redis Cluster must stay in one slot). The entry's own fields are
 * kept as `f.<name>`.
 */
export function addDeadLetter(
  tx: ChainableCommander,
  stream: string,
  group: string,
  d: Delivery,
  /** What the handler knows of the failure (e.g. `error`: the last attempt's message). */
  extra: Record<string, string> = {},
): void {
  const fields = [...Object.entries(extra).flat(), ...Object.entries(d.fields).flatMap(([k, v]) => [`f.${k}`, v])];
  tx.xadd(
    streams.deadLetterOf(stream),
    'MAXLEN',
    '~',
    DEAD_LETTER_MAXLEN,
    '*',
    'stream',
    stream,
    'group',
    group,
    'entry',
    d.id,
    'deliveries',
    String(d.deliveries),
    'at',
    new Date().toISOString(),
    ...fields,
  );
}

/** Unique per process start: a restarted process never inherits a dead one's pending entries by name. */
export function consumerName(role: string): string {
  return `${role}-${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}
