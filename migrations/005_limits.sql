-- Resilience and limits. Traces record the upstream attempts behind a reply
-- (retries, fallbacks) and which target a fallback stood in for; both are NULL
-- when the first attempt answered. Per-key limits live beside api_keys rather
-- than in it, so the key lookup (and its caches) stay unchanged; every write
-- bumps updated_at, which is what each instance polls.
ALTER TABLE traces ADD COLUMN attempts jsonb, ADD COLUMN fallback_from text;

CREATE TABLE api_key_limits (
  api_key_id      text PRIMARY KEY REFERENCES api_keys(id),
  organization_id text NOT NULL,
  rpm             integer CHECK (rpm > 0),
  tpm             integer CHECK (tpm > 0),
  budget_usd      double precision CHECK (budget_usd > 0),
  budget_period   text CHECK (budget_period IN ('day', 'month')),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK ((budget_usd IS NULL) = (budget_period IS NULL))
);

CREATE INDEX api_key_limits_updated_idx ON api_key_limits (updated_at);
-- Seeding budget counters at start sums one organisation's or one key's spend in the current period.
CREATE INDEX traces_key_time ON traces (api_key_id, created_at);
