-- Verified scopes are proven again on a schedule (issue 45 item 5, SCOPE_REPROVE_HOURS;
-- src/auth/scope-reproof.ts). Per approved scope:
--   last_proven_at   when the zone's servers last held the token (approval with --verify, or a
--                    re-proof); a verified scope is due again SCOPE_REPROVE_HOURS after it
--   proof_checked_at when a re-proof last started (its claim: the orchestrator that moves it owns
--                    that re-proof, so two orchestrators never run the same one)
--   proof_outcome    what that re-proof found: present, missing, indeterminate
--   proof_detail     its words (and, indeterminate, its reason), for `scope list`
--   suspended_at     set when a re-proof found the token gone, or when no re-proof could say for
--                    a whole period after the one that was due: the scope approves nothing for
--                    active work until `scope approve --verify` proves it again (or an operator
--                    approves it without proof)
-- A verified scope approved before this migration was last proven when it was verified.
ALTER TABLE workspace_target_scopes
  ADD COLUMN last_proven_at DATETIME(3) NULL,
  ADD COLUMN proof_checked_at DATETIME(3) NULL,
  ADD COLUMN proof_outcome ENUM('present', 'missing', 'indeterminate') CHARACTER SET ascii NULL,
  ADD COLUMN proof_detail VARCHAR(600) NULL,
  ADD COLUMN suspended_at DATETIME(3) NULL,
  ADD KEY idx_scopes_reproof (proof, suspended_at, last_proven_at);

UPDATE workspace_target_scopes SET last_proven_at = COALESCE(verified_at, created_at) WHERE proof = 'verified';
