// Hash tags shared by modules whose keys must sit in one slot of a Redis Cluster: one
// application's rate-limit buckets and its idempotency leases are read and written by one script.

/** The slot of one application (or other rate-limit subject). */
export function applicationTag(subject: string): string {
  return `{lss:rl:${subject}}`;
}
