// The one registry of machine error codes. The HTTP layer, the OpenAPI document and the table in
// docs/api.md are all derived from it; test/unit/errors-registry.test.ts fails when they drift.

export interface ErrorSpec {
  readonly status: number;
  readonly retryable: boolean;
  readonly message: string;
  /** Whether a Retry-After header accompanies this code (always, or only when the service knows). */
  readonly retryAfter: 'always' | 'when_known' | 'never';
  /** Codes SERVICE.md names; the rest are CONTRACT §3's documented extensions. */
  readonly origin: 'service' | 'extension';
}

const service = (
  status: number,
  retryable: boolean,
  message: string,
  retryAfter: ErrorSpec['retryAfter'] = 'never',
): ErrorSpec => ({ status, retryable, message, retryAfter, origin: 'service' });
const extension = (status: number, message: string): ErrorSpec => ({
  status,
  retryable: false,
  message,
  retryAfter: 'never',
  origin: 'extension',
});

export const errorRegistry = {
  active_authorization_required: service(403, false, 'Advanced or active work needs explicit request authorization.'),
  active_permission_required: service(403, false, 'The workspace lacks the required active capability.'),
  approved_target_scope_required: service(403, false, 'The active target is outside the approved workspace scope.'),
  authentication_required: service(401, false, 'A valid application Bearer key is required.'),
  capability_rate_limit_exceeded: service(
    429,
    true,
    'The product-specific minute or hour limit was reached.',
    'always',
  ),
  capability_unavailable: service(
    503,
    true,
    'A required public product lane is not currently available.',
    'when_known',
  ),
  idempotency_key_conflict: service(
    409,
    false,
    'The Idempotency-Key was already bound to a different normalized request.',
  ),
  idempotency_key_required: service(
    400,
    false,
    'A bounded visible Idempotency-Key (1-255 chars, 0x21-0x7E) is required for this write.',
  ),
  idempotency_request_in_progress: service(409, true, 'An identical idempotent request is still processing.', 'always'),
  insufficient_credits: service(402, false, 'Insufficient available execution credits.'),
  insufficient_scope: service(403, false, 'The key lacks the required operation scope.'),
  job_not_found: service(404, false, 'The job does not exist in the authorized tenant scope.'),
  monthly_credit_limit_exceeded: service(402, false, "The key's monthly credit ceiling would be exceeded."),
  object_not_found: service(404, false, 'The retained object does not exist in this job scope.'),
  rate_limit_exceeded: service(429, true, 'The application request rate limit was reached.', 'always'),
  responsible_use_required: service(403, false, 'Current responsible-use acceptance is required.'),
  scan_credit_budget_invalid: service(400, false, 'The requested maxCredits is invalid for the selected profile.'),
  scan_profile_unavailable: service(503, true, 'The selected public profile is unavailable.', 'when_known'),
  service_unavailable: service(503, true, 'The public execution dependency is unavailable.', 'when_known'),
  invalid_request: extension(400, 'The request is malformed or fails validation.'),
  invalid_cursor: extension(400, 'The cursor is malformed, tampered with, expired or belongs to another view.'),
  payload_too_large: extension(413, 'The request body exceeds 64 KiB.'),
  unsupported_media_type: extension(
    415,
    'The request body must be application/json, identity or gzip/deflate/br encoded.',
  ),
  request_timeout: extension(408, 'The request was not received completely in time.'),
  request_header_fields_too_large: extension(431, 'The request headers exceed the size limit.'),
  route_not_found: extension(404, 'No such route.'),
  method_not_allowed: extension(405, 'The route does not support this method.'),
  internal_error: extension(500, 'An internal error occurred.'),
  monitor_not_found: extension(404, 'The monitor does not exist in the authorized tenant scope.'),
  job_not_terminal: extension(409, 'The job has not finished: exports and reports are made of terminal jobs only.'),
  suppression_not_found: extension(404, 'The suppression does not exist in the authorized tenant scope.'),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorRegistry;
export const errorCodes = Object.keys(errorRegistry) as ErrorCode[];

export interface ApiErrorOptions {
  message?: string;
  details?: Record<string, unknown>;
  retryAfterSeconds?: number;
  headers?: Record<string, string>;
  /** For the operator's log only (which dependency, which lane…); never part of the reply. */
  cause?: string;
}

/** Thrown anywhere below the HTTP layer; rendered into the CONTRACT §3 envelope by one handler. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly headers: Record<string, string>;
  readonly logCause: string | undefined;
  constructor(code: ErrorCode, opts: ApiErrorOptions = {}) {
    const spec = errorRegistry[code];
    super(opts.message ?? spec.message);
    this.logCause = opts.cause;
    this.code = code;
    this.status = spec.status;
    this.details = opts.details;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.headers = opts.headers ?? {};
  }
}

export interface ErrorEnvelope {
  error: {
    code: ErrorCode;
    message: string;
    status: number;
    retryable: boolean;
    requestId: string;
    details?: Record<string, unknown>;
  };
}

export function errorEnvelope(err: ApiError, requestId: string): ErrorEnvelope {
  const spec = errorRegistry[err.code];
  return {
    error: {
      code: err.code,
      message: err.message,
      status: spec.status,
      retryable: spec.retryable,
      requestId,
      ...(err.details ? { details: err.details } : {}),
    },
  };
}
