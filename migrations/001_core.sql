-- Organisations and API keys. Keys are stored as a SHA-256 digest of the
-- secret only; `prefix` is the non-secret leading part shown in listings.
CREATE TABLE organizations (
  id            text PRIMARY KEY,
  rules_version bigint NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id              text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  name            text NOT NULL,
  prefix          text NOT NULL,
  key_hash        bytea NOT NULL UNIQUE,
  role            text NOT NULL CHECK (role IN ('admin', 'user')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_used_at    timestamptz,
  revoked_at      timestamptz
);

CREATE INDEX api_keys_org_idx ON api_keys (organization_id, created_at DESC) WHERE revoked_at IS NULL;
