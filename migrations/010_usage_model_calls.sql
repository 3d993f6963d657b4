-- Usage counts model calls only. Since 2026-11-29 every request to the model
-- API that shows a valid key is traced, the model listings, reads of stored
-- responses and requests no route takes included (endpoint `models`,
-- `stored_responses`, `other`); the rollups behind GET /v1/usage and the
-- console's overview keep counting what they counted before, the calls of
-- chat, embeddings and responses, so that a client listing models before each
-- call neither doubles the requests nor pulls the latency percentiles down.
-- This is 006's function with that one filter added beside the dry runs'.
CREATE OR REPLACE FUNCTION sluice_usage_rollup_sql(source text) RETURNS text
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
            FROM %2$I WHERE NOT dry_run AND endpoint IN ('chat', 'embeddings', 'responses')) AS t
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
