-- Tenancy (workspace → application → key), approved target scopes, and idempotency records.
-- Internal ids are BIGINT and never leave the service; public ids are random and prefixed.

CREATE TABLE workspaces (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(29) CHARACTER SET ascii NOT NULL,
  name VARCHAR(200) NOT NULL,
  active_capability TINYINT(1) NOT NULL DEFAULT 0,
  responsible_use_version VARCHAR(64) NULL,
  responsible_use_accepted_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_workspaces_public (public_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE workspace_target_scopes (
  workspace_id BIGINT UNSIGNED NOT NULL,
  suffix VARCHAR(253) CHARACTER SET ascii NOT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (workspace_id, suffix),
  CONSTRAINT fk_scopes_ws FOREIGN KEY (workspace_id) REFERENCES workspaces(id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE applications (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  name VARCHAR(200) NOT NULL,
  -- Per-application overrides of the CONTRACT §5 defaults, written by `admin limits set`.
  rate_limits JSON NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_applications_public (public_id),
  CONSTRAINT fk_apps_ws FOREIGN KEY (workspace_id) REFERENCES workspaces(id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE api_keys (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  application_id BIGINT UNSIGNED NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  key_hash BINARY(32) NOT NULL,
  hint CHAR(8) CHARACTER SET ascii NOT NULL,
  scopes VARCHAR(200) CHARACTER SET ascii NOT NULL,
  monthly_credit_limit BIGINT UNSIGNED NULL,
  revoked_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_api_keys_hash (key_hash),
  UNIQUE KEY uq_api_keys_public (public_id),
  CONSTRAINT fk_keys_app FOREIGN KEY (application_id) REFERENCES applications(id),
  CONSTRAINT fk_keys_ws FOREIGN KEY (workspace_id) REFERENCES workspaces(id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE idempotency_records (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  api_key_id BIGINT UNSIGNED NOT NULL,
  idem_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  fingerprint BINARY(32) NOT NULL,
  state ENUM('in_progress', 'completed') NOT NULL,
  -- The holder's random token: only the request that claimed the record may complete or release it.
  lease_token BINARY(16) NULL,
  lease_until DATETIME(3) NOT NULL,
  response_status SMALLINT UNSIGNED NULL,
  response_body MEDIUMTEXT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  expires_at DATETIME(3) NOT NULL,
  UNIQUE KEY uq_idem_key (api_key_id, idem_key),
  KEY ix_idem_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
