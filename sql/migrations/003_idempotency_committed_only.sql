-- Idempotency records now hold only committed replies. "In progress" is a Redis lease
-- (src/idempotency/lease.ts); the unique key below still guarantees one committed effect per
-- (API key, Idempotency-Key) even if Redis lost its leases.
DELETE FROM idempotency_records WHERE state <> 'completed';
ALTER TABLE idempotency_records
  DROP COLUMN state,
  DROP COLUMN lease_token,
  DROP COLUMN lease_until,
  MODIFY response_status SMALLINT UNSIGNED NOT NULL,
  MODIFY response_body MEDIUMTEXT NOT NULL;
