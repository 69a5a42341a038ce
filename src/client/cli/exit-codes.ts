// The CLI's outcomes and exit codes (docs/client.md). Scripts branch on the exit code or on
// `outcome` in --json output; both say the same thing.

export const exitCodes = {
  /** The answer is complete (or the request was accepted / the job is still running, when not waiting). */
  complete: 0,
  accepted: 0,
  in_progress: 0,
  /** --fail-on: a finding at or above the given severity. */
  fail_on: 1,
  /** An answer with incomplete coverage: a partial lookup, a partial or cancelled job. */
  partial: 2,
  /** The service refused the request (a 4xx error envelope). */
  refused: 3,
  /** The service could not do it: 5xx, no reply, a failed or unavailable job. */
  service_error: 4,
  /** Bad arguments or environment (EX_USAGE, as the admin CLI). */
  usage: 64,
} as const;

export type Outcome = keyof typeof exitCodes;

/** Interrupted by Ctrl-C (128 + SIGINT), as a shell reports it. */
export const EXIT_INTERRUPTED = 130;
