-- Where a native response's upstream copy lives: the base URL of its provider
-- when the upstream made it. DELETE /v1/responses/{id} forwards the delete to
-- that upstream, and only while the provider still points there: a provider
-- repointed since would be asked about a response it never held, and its 404
-- would read as "already gone" while the first upstream still holds it.
-- Translated rows (sluice's own ids) have none, nor do rows written before
-- this column; those go to the provider's base URL as configured now.
ALTER TABLE responses ADD COLUMN upstream_base_url text;
