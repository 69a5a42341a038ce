-- Approved target scopes mean a name someone controls (issue 30 items 4 and 5).
--
-- 1. Rows that approve nothing, stored before the admin CLI refused them, are removed: a single
--    label (every TLD is a public suffix: `com`), a numeric last label (`10.0.0.1`, `8.8.8`, `0.1`:
--    as a suffix it approved every IP literal ending in it), anything but LDH labels (`-foo.com`,
--    `_dmarc.example.com`), names under `arpa`, and the special-use suffixes of
--    src/net/special-use.ts (`cluster.local`, `corp.internal`, `home.arpa`…) except `test`, which
--    only the lab approves (ALLOW_SPECIAL_USE_DOMAINS=test). A multi-label public suffix (`co.uk`,
--    `github.io`) needs the public suffix list, which SQL does not have: the release role removes
--    those after migrating (src/auth/scope-prune.ts, every release, so a suffix the list gains
--    later goes too), and every reader already skips them (src/auth/approved-scopes.ts).
-- 2. Each scope says how it was approved: `verified` (the TXT record _lss-challenge.<scope> held the
--    workspace's token) or `operator_override` (every row approved before this migration).
-- 3. scope_challenges holds the token per (workspace, scope): issued by `scope challenge`, read by
--    `scope approve --verify` and by every re-check of a verified scope; removed by `scope revoke`.
-- 4. jobs.active_scope: the scope an active job was admitted under and its proof, shown in the
--    job's coverage (`coverage.activeScope`).
DELETE FROM workspace_target_scopes WHERE suffix NOT LIKE '%.%';
DELETE FROM workspace_target_scopes WHERE suffix REGEXP '(^|[.])[0-9]+$';
DELETE FROM workspace_target_scopes
  WHERE suffix NOT REGEXP '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?[.])+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';
DELETE FROM workspace_target_scopes WHERE suffix LIKE '%.arpa';
DELETE s FROM workspace_target_scopes s
  JOIN (
    SELECT 'localhost' AS x UNION ALL SELECT 'invalid' UNION ALL SELECT 'example' UNION ALL SELECT 'local'
    UNION ALL SELECT 'onion' UNION ALL SELECT 'alt' UNION ALL SELECT 'internal' UNION ALL SELECT 'corp'
    UNION ALL SELECT 'home' UNION ALL SELECT 'mail'
  ) special ON s.suffix LIKE CONCAT('%.', special.x);

ALTER TABLE workspace_target_scopes
  ADD COLUMN proof ENUM('verified', 'operator_override') CHARACTER SET ascii NOT NULL DEFAULT 'operator_override',
  ADD COLUMN verified_at DATETIME(3) NULL;

CREATE TABLE scope_challenges (
  workspace_id BIGINT UNSIGNED NOT NULL,
  suffix VARCHAR(253) CHARACTER SET ascii NOT NULL,
  token VARCHAR(64) CHARACTER SET ascii NOT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (workspace_id, suffix),
  CONSTRAINT fk_challenges_ws FOREIGN KEY (workspace_id) REFERENCES workspaces(id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE jobs ADD COLUMN active_scope JSON NULL;
