-- The ids of a stored response's items, input and output, so that an
-- item_reference finds the response that holds the item whatever made its id.
-- Ids of ours embed their response's id; an upstream's native ids (OpenAI's
-- msg_…) do not, and until 2026-11-29 a reference to one went upstream
-- unchecked, where the gateway's one credential reads every organisation's
-- stored items.
ALTER TABLE responses ADD COLUMN item_ids text[] NOT NULL DEFAULT '{}';

UPDATE responses SET item_ids = ARRAY(
  SELECT e->>'id' FROM json_array_elements(CASE WHEN json_typeof(input) = 'array' THEN input ELSE '[]'::json END) e
  WHERE json_typeof(e) = 'object' AND e->>'id' IS NOT NULL
  UNION ALL
  SELECT e->>'id' FROM json_array_elements(CASE WHEN json_typeof(response->'output') = 'array' THEN response->'output' ELSE '[]'::json END) e
  WHERE json_typeof(e) = 'object' AND e->>'id' IS NOT NULL
);

CREATE INDEX responses_item_ids ON responses USING gin (item_ids);
