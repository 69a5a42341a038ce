// The web product's pool tasks as the task table (workers/pool/parse-tasks.ts) and the piscina
// worker see them: the http lane's parsing (assess.ts: parse5, tough-cookie, the CSP and header
// parsers) loads on the first web task a thread runs, so a thread that only parses certificates
// for another lane stays small.
import type { WebAssessment } from './assess.ts';
import type { WebEvidence } from './evidence.ts';

export async function assessWebEvidence(e: WebEvidence): Promise<WebAssessment | null> {
  return (await import('./assess.ts')).assessWebEvidence(e);
}

export const webPoolTasks = { assessWebEvidence } as const;
