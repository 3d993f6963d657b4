-- Stored responses of the Responses API (POST /v1/responses with store), so that
-- previous_response_id works on any gateway instance. One row per response:
-- its input items as the upstream saw them (after DLP) and the response object
-- as the caller received it (after moderation). A conversation is the chain of
-- rows linked by previous_response_id. Rows expire at expires_at (retention)
-- and are swept by the gateway; reads ignore expired rows.

CREATE TABLE responses (
  id                   text        PRIMARY KEY,
  organization_id      text        NOT NULL,
  provider             text        NOT NULL,
  model                text        NOT NULL,
  -- true when the upstream's own Responses API answered (the id is the upstream's)
  native               boolean     NOT NULL,
  previous_response_id text,
  input                jsonb       NOT NULL,
  response             jsonb       NOT NULL,
  created_at           timestamptz NOT NULL,
  expires_at           timestamptz NOT NULL
);

CREATE INDEX responses_expires ON responses (expires_at);
