-- Usage rollups for GET /v1/usage and the console's overview. Scanning raw
-- traces cannot answer "30 days by key" in 200 ms at 10 million rows, so every
-- insert into `traces` also adds its rows, in the same statement and therefore
-- the same transaction, to three rollups: per minute, per hour and per day. A
-- statement-level trigger with a transition table does it, so the direct COPY,
-- the idempotent spool replay (which sees only the rows ON CONFLICT let
-- through) and any manual load all keep the rollups exact.
--
-- A rollup row is one (organisation, dimension, value, bucket): dimension ''
-- (value '') is the organisation's total, and 'model', 'provider' and 'key'
-- (an api_key_id) are the breakdowns. Keeping the dimensions apart, rather
-- than one row per (key, model, provider) combination, keeps a bucket at a few
-- dozen rows however the combinations multiply; the price is that usage can be
-- filtered by one dimension at a time.
--
-- Latency and TTFB percentiles cannot be summed, so each row carries an
-- 18-bucket histogram of each (upper bounds in sluice_usage_bounds(), in ms);
-- the API estimates p50/p95 from the summed histogram. Dry runs are not usage
-- and are left out. A missing provider or model (refused before routing) is ''.

CREATE FUNCTION sluice_usage_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY[10, 25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000, 20000, 40000]::double precision[]
$$;

DO $$
DECLARE
  hist text := (SELECT string_agg(format('lat_h%1$s integer NOT NULL DEFAULT 0, ttfb_h%1$s integer NOT NULL DEFAULT 0', lpad(i::text, 2, '0')), ', ')
                FROM generate_series(0, 17) AS i);
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['usage_minute', 'usage_hour', 'usage_day'] LOOP
    EXECUTE format($f$CREATE TABLE %I (
      organization_id   text             NOT NULL,
      dim               text             NOT NULL,
      value             text             NOT NULL,
      bucket            timestamptz      NOT NULL,
      requests          integer          NOT NULL,
      errors            integer          NOT NULL,
      streamed          integer          NOT NULL,
      prompt_tokens     bigint           NOT NULL,
      completion_tokens bigint           NOT NULL,
      total_tokens      bigint           NOT NULL,
      cost_usd          double precision NOT NULL,
      latency_sum       bigint           NOT NULL,
      ttfb_count        integer          NOT NULL,
      ttfb_sum          double precision NOT NULL,
      %s,
      PRIMARY KEY (organization_id, dim, bucket, value))$f$, tbl, hist);
  END LOOP;
END $$;

-- The statement that adds the rows of `source` (the trigger's transition table,
-- or `traces` itself for the backfill below) to the three rollups. Groups are
-- upserted in primary-key order, so two writers lock rows in the same order and
-- cannot deadlock each other.
CREATE FUNCTION sluice_usage_rollup_sql(source text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  idx text[] := (SELECT array_agg(lpad(i::text, 2, '0') ORDER BY i) FROM generate_series(0, 17) AS i);
  counts text := (SELECT string_agg(format('count(*) FILTER (WHERE lb = %1$s) AS lat_h%2$s, count(*) FILTER (WHERE tb = %1$s) AS ttfb_h%2$s', i - 1, idx[i]), ', ' ORDER BY i)
                  FROM generate_series(1, 18) AS i);
  hist text := (SELECT string_agg(format('lat_h%1$s, ttfb_h%1$s', x), ', ') FROM unnest(idx) AS x);
  sums text := (SELECT string_agg(format('sum(lat_h%1$s), sum(ttfb_h%1$s)', x), ', ') FROM unnest(idx) AS x);
  adds text := (SELECT string_agg(format('lat_h%1$s = u.lat_h%1$s + EXCLUDED.lat_h%1$s, ttfb_h%1$s = u.ttfb_h%1$s + EXCLUDED.ttfb_h%1$s', x), ', ')
                FROM unnest(idx) AS x);
  scalars text := 'requests, errors, streamed, prompt_tokens, completion_tokens, total_tokens, cost_usd, latency_sum, ttfb_count, ttfb_sum';
  scalar_sums text := 'sum(requests), sum(errors), sum(streamed), sum(prompt_tokens), sum(completion_tokens), sum(total_tokens), '
                      || 'sum(cost_usd), sum(latency_sum), sum(ttfb_count), sum(ttfb_sum)';
  upd text := 'requests = u.requests + EXCLUDED.requests, errors = u.errors + EXCLUDED.errors, streamed = u.streamed + EXCLUDED.streamed, '
              || 'prompt_tokens = u.prompt_tokens + EXCLUDED.prompt_tokens, completion_tokens = u.completion_tokens + EXCLUDED.completion_tokens, '
              || 'total_tokens = u.total_tokens + EXCLUDED.total_tokens, cost_usd = u.cost_usd + EXCLUDED.cost_usd, '
              || 'latency_sum = u.latency_sum + EXCLUDED.latency_sum, ttfb_count = u.ttfb_count + EXCLUDED.ttfb_count, '
              || 'ttfb_sum = u.ttfb_sum + EXCLUDED.ttfb_sum, ';
  upsert text := 'INSERT INTO %1$I AS u (organization_id, dim, value, bucket, %2$s, %3$s) '
                 || 'SELECT organization_id, dim, value, date_trunc(%4$L, minute, ''UTC''), %5$s, %6$s FROM e GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 4, 3 '
                 || 'ON CONFLICT (organization_id, dim, bucket, value) DO UPDATE SET %7$s %8$s';
BEGIN
  RETURN format($q$
    WITH base AS (
      SELECT organization_id, date_trunc('minute', created_at, 'UTC') AS minute, api_key_id, coalesce(provider, '') AS provider,
             coalesce(model, '') AS model, count(*)::int AS requests, count(*) FILTER (WHERE status_code >= 400)::int AS errors,
             count(*) FILTER (WHERE streamed)::int AS streamed, sum(prompt_tokens)::bigint AS prompt_tokens,
             sum(completion_tokens)::bigint AS completion_tokens, sum(total_tokens)::bigint AS total_tokens,
             sum(cost_usd) AS cost_usd, sum(latency_ms)::bigint AS latency_sum, count(ttfb_ms)::int AS ttfb_count,
             coalesce(sum(ttfb_ms), 0) AS ttfb_sum, %1$s
      FROM (SELECT *, width_bucket(latency_ms::double precision, sluice_usage_bounds()) AS lb,
                      width_bucket(ttfb_ms, sluice_usage_bounds()) AS tb
            FROM %2$I WHERE NOT dry_run) AS t
      GROUP BY 1, 2, 3, 4, 5
    ), e AS (
      SELECT b.*, x.dim, x.value FROM base AS b
      CROSS JOIN LATERAL (VALUES ('', ''), ('model', b.model), ('provider', b.provider), ('key', b.api_key_id)) AS x(dim, value)
    ), m AS (%3$s), h AS (%4$s)
    %5$s$q$,
    counts, source,
    format(upsert, 'usage_minute', scalars, hist, 'minute', scalar_sums, sums, upd, adds),
    format(upsert, 'usage_hour', scalars, hist, 'hour', scalar_sums, sums, upd, adds),
    format(upsert, 'usage_day', scalars, hist, 'day', scalar_sums, sums, upd, adds));
END $$;

CREATE FUNCTION sluice_usage_on_traces_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sluice_usage_rollup_sql('new_traces');
  RETURN NULL;
END $$;

CREATE TRIGGER traces_usage_rollup AFTER INSERT ON traces
  REFERENCING NEW TABLE AS new_traces
  FOR EACH STATEMENT EXECUTE FUNCTION sluice_usage_on_traces_insert();

-- Traces written before this migration.
DO $$ BEGIN EXECUTE sluice_usage_rollup_sql('traces'); END $$;

-- Retention: the rollups keep what the traces keep. This is 003's function
-- with one addition, the DELETE of rollup rows before the cutoff.
CREATE OR REPLACE FUNCTION sluice_traces_drop_before(cutoff date) RETURNS integer
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
  DELETE FROM usage_minute WHERE bucket < (cutoff::timestamp AT TIME ZONE 'UTC');
  DELETE FROM usage_hour WHERE bucket < (cutoff::timestamp AT TIME ZONE 'UTC');
  DELETE FROM usage_day WHERE bucket < (cutoff::timestamp AT TIME ZONE 'UTC');
  RETURN dropped;
END $$;
