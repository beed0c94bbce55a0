-- A receiver's subscriptions: the event types it takes (exact names and `prefix.*`
-- wildcards) and an optional filter on the payload (src/events/event-filter.policy.ts).
-- Not null, constant defaults: no table rewrite.
ALTER TABLE "receiver" ADD COLUMN "event_types" TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE "receiver" ADD COLUMN "event_filter" JSONB;

-- The same subscriptions by pattern, for the publish: an event of type `a.b.c` goes
-- to the receivers of patterns `a.b.c`, `a.b.*` and `a.*`, found through the primary
-- key (api_key_id, pattern) without reading the key's other receivers, however many
-- it has. Kept by the trigger below from receiver.event_types, in the writing
-- transaction, so the two never disagree; a receiver's rows go with it (cascade).
CREATE TABLE "event_subscription" (
    "api_key_id" UUID NOT NULL,
    "pattern" TEXT NOT NULL,
    "receiver_id" UUID NOT NULL,
    CONSTRAINT "event_subscription_pkey" PRIMARY KEY ("api_key_id", "pattern", "receiver_id")
);
ALTER TABLE "event_subscription" ADD CONSTRAINT "event_subscription_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- the trigger's and the cascade's way to one receiver's rows
CREATE INDEX "event_subscription_receiver_idx" ON "event_subscription" ("receiver_id");

-- Locks only the receiver's own subscription rows (the receiver row is already locked by its writer).
CREATE FUNCTION "receiver_event_subscriptions"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.event_types IS NOT DISTINCT FROM OLD.event_types THEN
    RETURN NULL;
  END IF;
  DELETE FROM event_subscription WHERE receiver_id = NEW.id AND pattern <> ALL (NEW.event_types);
  INSERT INTO event_subscription (api_key_id, pattern, receiver_id)
    SELECT NEW.api_key_id, p, NEW.id FROM unnest(NEW.event_types) AS p
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER "receiver_event_subscriptions" AFTER INSERT OR UPDATE OF "event_types" ON "receiver"
  FOR EACH ROW EXECUTE FUNCTION "receiver_event_subscriptions"();
