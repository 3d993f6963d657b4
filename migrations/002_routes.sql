-- Routing rules, per organisation. Every insert, update and delete bumps
-- organizations.rules_version in the same transaction (a trigger, so no code
-- path can forget), and each instance's poller recompiles only the
-- organisations whose version moved.
CREATE TABLE routes (
  id              text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  name            text NOT NULL,
  priority        integer NOT NULL DEFAULT 0,
  enabled         boolean NOT NULL DEFAULT true,
  action_kind     text NOT NULL CHECK (action_kind IN ('pin', 'auto')),
  match           jsonb NOT NULL,
  action          jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

-- Listing and compiling both read one organisation in evaluation order.
CREATE INDEX routes_org_order_idx ON routes (organization_id, priority DESC, created_at, id);

CREATE FUNCTION routes_bump_rules_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    UPDATE organizations SET rules_version = rules_version + 1 WHERE id = OLD.organization_id;
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.organization_id <> OLD.organization_id) THEN
    UPDATE organizations SET rules_version = rules_version + 1 WHERE id = NEW.organization_id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER routes_rules_version AFTER INSERT OR UPDATE OR DELETE ON routes
  FOR EACH ROW EXECUTE FUNCTION routes_bump_rules_version();
