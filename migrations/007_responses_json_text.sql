-- jsonb cannot hold a NUL (\u0000) nor a lone surrogate, and both are valid
-- JSON text that callers send and models answer: such a response was refused
-- by Postgres and never stored, so retrieving it or continuing from it failed.
-- json keeps the text exactly as written and reads back to the same strings;
-- nothing queries inside these columns, so jsonb's operators are not missed.
ALTER TABLE responses
  ALTER COLUMN input TYPE json USING input::json,
  ALTER COLUMN response TYPE json USING response::json;
