-- Traces: one compact row per request, plus an optional compressed payload.
-- Both tables are range-partitioned by UTC day on created_at so that retention
-- is a DROP of whole partitions rather than a DELETE that bloats the table.
-- The primary key must contain the partition key; (request_id, created_at) is
-- what makes replay idempotent (INSERT ... ON CONFLICT DO NOTHING), because a
-- replayed row carries the same created_at as the original.

CREATE TABLE traces (
  request_id        text             NOT NULL,
  organization_id   text             NOT NULL,
  api_key_id        text             NOT NULL,
  endpoint          text             NOT NULL,
  provider          text,
  model             text,
  requested_model   text,
  route_reason      text,
  latency_ms        integer          NOT NULL,
  prompt_tokens     integer          NOT NULL,
  completion_tokens integer          NOT NULL,
  total_tokens      integer          NOT NULL,
  cost_usd          double precision NOT NULL,
  status_code       integer          NOT NULL,
  error_code        text,
  redactions        integer          NOT NULL,
  streamed          boolean          NOT NULL,
  ttfb_ms           double precision,
  stream_aborted    boolean          NOT NULL,
  disclosed_bytes   integer          NOT NULL,
  dry_run           boolean          NOT NULL,
  has_payload       boolean          NOT NULL,
  created_at        timestamptz      NOT NULL,
  PRIMARY KEY (request_id, created_at)
) PARTITION BY RANGE (created_at);

-- Every API query is scoped to one organisation and pages newest first; the
-- filtered variants put the filter column before time. request_id, the tie
-- breaker, is left out of these indexes: it made COPY about 20% slower, and
-- rows sharing a millisecond are few enough to sort. Lookups by request_id use
-- the primary key.
CREATE INDEX traces_org_time ON traces (organization_id, created_at DESC);
CREATE INDEX traces_org_status_time ON traces (organization_id, status_code, created_at DESC);
CREATE INDEX traces_org_provider_time ON traces (organization_id, provider, created_at DESC);

CREATE TABLE trace_payloads (
  request_id      text        NOT NULL,
  created_at      timestamptz NOT NULL,
  organization_id text        NOT NULL,
  -- gzip of the JSON document {request, response}
  body            bytea       NOT NULL,
  PRIMARY KEY (request_id, created_at)
) PARTITION BY RANGE (created_at);

-- Creates the partitions of both tables for one UTC day. Several gateway
-- instances may race to create the same day, hence the advisory lock.
CREATE FUNCTION sluice_traces_ensure_day(day date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  suffix text := to_char(day, 'YYYYMMDD');
  lo text := quote_literal(day::text || ' 00:00:00+00');
  hi text := quote_literal((day + 1)::text || ' 00:00:00+00');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('sluice_traces_partitions'));
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF traces FOR VALUES FROM (%s) TO (%s)',
                 'traces_p' || suffix, lo, hi);
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF trace_payloads FOR VALUES FROM (%s) TO (%s)',
                 'trace_payloads_p' || suffix, lo, hi);
END $$;

-- Drops every daily partition (of both tables) that ends on or before `cutoff`.
-- Returns how many partitions it dropped.
CREATE FUNCTION sluice_traces_drop_before(cutoff date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  part record;
  dropped integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('sluice_traces_partitions'));
  FOR part IN
    SELECT c.relname
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    JOIN pg_class p ON p.oid = i.inhparent
    WHERE p.relname IN ('traces', 'trace_payloads')
      AND c.relname ~ '_p[0-9]{8}$'
      AND to_date(right(c.relname, 8), 'YYYYMMDD') < cutoff
  LOOP
    EXECUTE format('DROP TABLE IF EXISTS %I', part.relname);
    dropped := dropped + 1;
  END LOOP;
  RETURN dropped;
END $$;

SELECT sluice_traces_ensure_day((now() AT TIME ZONE 'UTC')::date + d) FROM generate_series(-1, 2) AS d;
