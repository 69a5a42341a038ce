// What admission learns about one product request as its steps run (CONTRACT §2), whoever asks:
// the web role keeps it on res.locals (src/http/context.ts extends it), the monitor scheduler
// makes one per run. Nothing here knows a transport.
import type { Logger } from 'pino';
import type { Principal } from '../../auth/principal.ts';
import type { ApiError } from '../../contract/errors.ts';
import type { IdempotencyClaim, LeaseFound } from '../../idempotency/lease.ts';
import type { ActiveGrant } from '../../products/kit/active-admission.ts';

/** Where in the admission chain a request is (CONTRACT §2), for the log line of a failure. */
export type AdmissionStep =
  | 'authentication'
  | 'rate_limit'
  | 'idempotency_key'
  | 'validation'
  | 'active_gates'
  | 'product_limit'
  | 'idempotency'
  | 'readiness'
  | 'credits_and_dispatch'
  | 'execution'
  | 'job_read'
  | 'cancel'
  | 'monitor'
  | 'suppression'
  | 'inventory';

export interface AdmissionState {
  requestId: string;
  step?: AdmissionStep;
  log: Logger;
  principal?: Principal;
  /** The parsed JSON body exactly as sent (for the fingerprint). */
  rawBody?: unknown;
  /** The validated input. */
  input?: unknown;
  /** Active work: the approved scope it runs under and its proof (step 6), kept with the job. */
  activeGrant?: ActiveGrant;
  /** A product-limit refusal, reported only after the cheaper local checks (CONTRACT §2 order). */
  deferredLimit?: ApiError;
  /** The well-formed Idempotency-Key of the request, if it carries one. */
  idempotencyKey?: string;
  claim?: IdempotencyClaim;
  /** What the admission script found for the Idempotency-Key (step 3 learns it, step 8 acts). */
  lease?: LeaseFound & { fingerprint: string };
  /** A body error, reported at step 5 although the body is read before the limits (step 3). */
  bodyError?: ApiError;
  /** The controller of a running inline execution: the transport aborts it when the client leaves. */
  execution?: AbortController;
}
