// The vocabulary of a product's lanes, as every layer speaks it: how a lane ended, what it could not
// cover, where its facts came from, and how ready it is. Types and constants only (CONTRACT §7).

export const laneStatuses = [
  'completed',
  'partial',
  'unavailable',
  'timeout',
  'failed',
  'skipped',
  'cancelled',
  'budget_exhausted',
] as const;
export type LaneStatus = (typeof laneStatuses)[number];

export interface LaneOutcome {
  lane: string;
  required: boolean;
  status: LaneStatus;
  durationMs?: number;
  /** Machine reason for a non-completed lane (e.g. resolver_unreachable, not_configured). */
  reason?: string;
}

export interface Limitation {
  code: string;
  message: string;
}

export interface SourceRef {
  source: string;
  version?: string;
  /** The credit a source's licence asks for wherever its data is shown (e.g. CC BY 4.0). */
  attribution?: string;
}

/** A product lane: one part of a product's projection, reported in the envelope (CONTRACT §8). */
export interface LaneSpec {
  lane: string;
  required: boolean;
  description: string;
}

/** What a lane can do right now, independent of any request. */
export type LaneReadiness = 'ready' | 'unconfigured' | 'down' | 'not_built';

export type ProductReadiness = 'available' | 'partially_configured' | 'unavailable';

/** Which product rate limits a write counts against (CONTRACT §5). */
export type RateClass = 'sync_lookup' | 'async_lookup' | 'scan';

/** The envelope body of a lookup: its projection and what each lane did (CONTRACT §7). */
export interface SyncOutcome<R = unknown> {
  result: R;
  lanes: LaneOutcome[];
  sources: SourceRef[];
  limitations: Limitation[];
}

export function laneOutcome(spec: LaneSpec, status: LaneStatus, extra: Partial<LaneOutcome> = {}): LaneOutcome {
  return { lane: spec.lane, required: spec.required, status, ...extra };
}
