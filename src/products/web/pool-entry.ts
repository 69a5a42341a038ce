// The web product's pool tasks as the task table (workers/pool/parse-tasks.ts) and the piscina
// worker see them: the http lane's parsing (assess.ts: parse5, tough-cookie, the CSP and header
// parsers) loads on the first web task a thread runs, so a thread that only parses certificates
// for another lane stays small.
import type { WebAssessment } from './assess.ts';
import type { WebEvidence } from './evidence.ts';

let loading: Promise<typeof import('./assess.ts')> | undefined;
/** Loads the http lane's parsers (the pool warms a replacement thread with it). */
export const loadWebPoolTasks = () => (loading ??= import('./assess.ts'));

export async function assessWebEvidence(e: WebEvidence): Promise<WebAssessment | null> {
  return (await loadWebPoolTasks()).assessWebEvidence(e);
}

export const webPoolTasks = { assessWebEvidence } as const;
