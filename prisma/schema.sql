-- The schema the migrations in prisma/migrations build (test/db/schema.test.ts checks it).

CREATE TABLE api_key (
  id uuid NOT NULL,
  name text NOT NULL,
  prefix text NOT NULL,
  hash text NOT NULL,
  is_admin boolean NOT NULL DEFAULT false,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  revoked_at timestamp(3) with time zone,
  weight integer NOT NULL DEFAULT 1,
  allow_private_networks boolean NOT NULL DEFAULT false
);

CREATE TABLE attempt (
  id bigint NOT NULL DEFAULT nextval('attempt_id_seq'::regclass),
  callback_id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  host text NOT NULL,
  number integer NOT NULL,
  started_at timestamp(3) with time zone NOT NULL,
  duration_ms double precision NOT NULL,
  dns_ms double precision,
  connect_ms double precision,
  tls_ms double precision,
  first_byte_ms double precision,
  status_code integer,
  outcome text NOT NULL,
  error text,
  response_headers jsonb,
  response_body text,
  worker text,
  tunnel_ms double precision,
  receiver_id uuid,
  transformed jsonb,
  auth text,
  token_ms double precision
);

CREATE TABLE batch (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  label text,
  idempotency_key text,
  request_hash text,
  total integer NOT NULL,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  completed_at timestamp(3) with time zone,
  notify_url text,
  notify_host text,
  notify_receiver_id uuid,
  operator_event boolean NOT NULL DEFAULT false,
  body_bytes bigint NOT NULL DEFAULT 0
);

CREATE TABLE callback (
  id uuid NOT NULL,
  batch_id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  external_id text,
  url text NOT NULL,
  host text NOT NULL,
  method text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  body text,
  timeout_ms integer NOT NULL,
  max_attempts integer NOT NULL,
  retry_delays_ms integer[],
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamp(3) with time zone NOT NULL,
  lease_owner text,
  lease_expires_at timestamp(3) with time zone,
  last_status_code integer,
  last_error text,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  completed_at timestamp(3) with time zone,
  priority smallint NOT NULL DEFAULT 1,
  ordering_key text,
  traceparent text,
  receiver_id uuid,
  held boolean NOT NULL DEFAULT false,
  recovery_id uuid,
  done_at timestamp(3) with time zone NOT NULL DEFAULT 'infinity'::timestamp with time zone,
  body_event_id uuid
);

CREATE TABLE event (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  event_id text NOT NULL,
  type text NOT NULL,
  payload jsonb,
  request_hash text NOT NULL,
  batch_id uuid NOT NULL,
  deliveries integer NOT NULL,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  body text
);

CREATE TABLE event_subscription (
  api_key_id uuid NOT NULL,
  pattern text NOT NULL,
  receiver_id uuid NOT NULL
);

CREATE TABLE event_type (
  api_key_id uuid NOT NULL,
  name text NOT NULL,
  description text,
  schema jsonb,
  deprecated boolean NOT NULL DEFAULT false,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  timeout_ms integer,
  max_attempts integer,
  retry_delays_ms integer[]
);

CREATE TABLE gone_endpoint (
  url text NOT NULL,
  host text NOT NULL,
  api_key_id uuid NOT NULL,
  status_code integer NOT NULL,
  gone_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE host (
  host text NOT NULL,
  max_in_flight integer,
  rate_per_sec double precision,
  in_flight integer NOT NULL DEFAULT 0,
  tokens double precision NOT NULL DEFAULT 0,
  tokens_at timestamp(3) with time zone,
  breaker_state text NOT NULL DEFAULT 'closed'::text,
  consecutive_failures integer NOT NULL DEFAULT 0,
  opened_at timestamp(3) with time zone,
  open_until timestamp(3) with time zone,
  limits_updated_at timestamp(3) with time zone,
  limits_updated_by uuid,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  claimed_by text,
  claimed_until timestamp(3) with time zone
);

CREATE TABLE host_key_breaker (
  host text NOT NULL,
  api_key_id uuid NOT NULL,
  state text NOT NULL DEFAULT 'closed'::text,
  failures integer NOT NULL DEFAULT 0,
  opened_at timestamp(3) with time zone,
  open_until timestamp(3) with time zone,
  updated_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE latency_rollup (
  api_key_id uuid NOT NULL,
  bucket_ms integer NOT NULL,
  start timestamp(3) with time zone NOT NULL,
  count integer NOT NULL,
  ok integer NOT NULL,
  pct double precision[] NOT NULL,
  max double precision,
  computed_at timestamp(3) with time zone NOT NULL DEFAULT now()
);

CREATE TABLE operator_endpoint (
  api_key_id uuid NOT NULL,
  receiver_id uuid NOT NULL,
  event_types text[],
  host text NOT NULL,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE portal_session (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  receiver_id uuid NOT NULL,
  capabilities text[] NOT NULL,
  theme jsonb,
  return_url text,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  expires_at timestamp(3) with time zone NOT NULL,
  revoked_at timestamp(3) with time zone
);

CREATE TABLE receiver (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  name text NOT NULL,
  url text,
  description text,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  timeout_ms integer,
  max_attempts integer,
  retry_delays_ms integer[],
  disabled boolean NOT NULL DEFAULT false,
  disabled_reason text,
  disabled_at timestamp(3) with time zone,
  failing_since timestamp(3) with time zone,
  last_failure_at timestamp(3) with time zone,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  last_success_at timestamp(3) with time zone,
  deleted_at timestamp(3) with time zone,
  event_types text[] NOT NULL DEFAULT '{}'::text[],
  event_filter jsonb,
  portal_hosts text[] NOT NULL DEFAULT '{}'::text[],
  transform_code text
);

CREATE TABLE receiver_credential (
  receiver_id uuid NOT NULL,
  version uuid NOT NULL,
  auth_type text,
  auth jsonb,
  tls jsonb,
  key_id text NOT NULL,
  sealed text NOT NULL,
  updated_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE receiver_token (
  receiver_id uuid NOT NULL,
  version uuid NOT NULL,
  token_id uuid,
  key_id text,
  sealed text,
  fetched_at timestamp(3) with time zone,
  refresh_at timestamp(3) with time zone,
  expires_at timestamp(3) with time zone,
  fetching_by text,
  fetching_until timestamp(3) with time zone
);

CREATE TABLE recovery (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  receiver_id uuid,
  host text,
  batch_id uuid,
  statuses text[] NOT NULL,
  since timestamp(3) with time zone,
  until timestamp(3) with time zone NOT NULL,
  priority smallint NOT NULL,
  matched integer NOT NULL,
  notified_at timestamp(3) with time zone
);

CREATE TABLE signing_secret (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  secret text NOT NULL,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  expires_at timestamp(3) with time zone,
  receiver_id uuid,
  destination text,
  key_id text
);

CREATE TABLE task (
  id uuid NOT NULL,
  api_key_id uuid NOT NULL,
  kind text NOT NULL,
  status text NOT NULL DEFAULT 'running'::text,
  receiver_id uuid,
  batch_id uuid,
  statuses text[],
  cursor uuid,
  done integer NOT NULL DEFAULT 0,
  created_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at timestamp(3) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP,
  finished_at timestamp(3) with time zone
);

-- attempt_before: a partition of attempt
-- callback_live: a partition of callback

ALTER TABLE api_key ADD CONSTRAINT api_key_pkey PRIMARY KEY (id);
ALTER TABLE api_key ADD CONSTRAINT api_key_weight_check CHECK (((weight >= 1) AND (weight <= 1000)));
ALTER TABLE attempt ADD CONSTRAINT attempt_pkey PRIMARY KEY (id, started_at);
ALTER TABLE batch ADD CONSTRAINT batch_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE batch ADD CONSTRAINT batch_pkey PRIMARY KEY (id);
ALTER TABLE callback ADD CONSTRAINT callback_lease_in_flight_check CHECK ((((lease_owner IS NOT NULL) = (status = 'in_flight'::text)) AND ((lease_owner IS NULL) = (lease_expires_at IS NULL))));
ALTER TABLE callback ADD CONSTRAINT callback_ordering_key_check CHECK (((char_length(ordering_key) >= 1) AND (char_length(ordering_key) <= 200)));
ALTER TABLE callback ADD CONSTRAINT callback_pkey PRIMARY KEY (id, done_at);
ALTER TABLE callback ADD CONSTRAINT callback_priority_check CHECK (((priority >= 0) AND (priority <= 2)));
ALTER TABLE callback ADD CONSTRAINT callback_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'in_flight'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])));
ALTER TABLE callback_live ADD CONSTRAINT callback_live_receiver_id_fkey FOREIGN KEY (receiver_id) REFERENCES receiver(id) ON UPDATE CASCADE ON DELETE SET NULL;
ALTER TABLE event ADD CONSTRAINT event_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE event ADD CONSTRAINT event_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES batch(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE event ADD CONSTRAINT event_payload_or_body_check CHECK (((payload IS NULL) <> (body IS NULL)));
ALTER TABLE event ADD CONSTRAINT event_pkey PRIMARY KEY (id);
ALTER TABLE event_subscription ADD CONSTRAINT event_subscription_pkey PRIMARY KEY (api_key_id, pattern, receiver_id);
ALTER TABLE event_subscription ADD CONSTRAINT event_subscription_receiver_id_fkey FOREIGN KEY (receiver_id) REFERENCES receiver(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE event_type ADD CONSTRAINT event_type_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE event_type ADD CONSTRAINT event_type_pkey PRIMARY KEY (api_key_id, name);
ALTER TABLE gone_endpoint ADD CONSTRAINT gone_endpoint_pkey PRIMARY KEY (api_key_id, url);
ALTER TABLE host ADD CONSTRAINT host_breaker_state_check CHECK ((breaker_state = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text])));
ALTER TABLE host ADD CONSTRAINT host_in_flight_check CHECK ((in_flight >= 0));
ALTER TABLE host ADD CONSTRAINT host_pkey PRIMARY KEY (host);
ALTER TABLE host_key_breaker ADD CONSTRAINT host_key_breaker_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE host_key_breaker ADD CONSTRAINT host_key_breaker_pkey PRIMARY KEY (host, api_key_id);
ALTER TABLE host_key_breaker ADD CONSTRAINT host_key_breaker_state_check CHECK ((state = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text])));
ALTER TABLE latency_rollup ADD CONSTRAINT latency_rollup_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE latency_rollup ADD CONSTRAINT latency_rollup_pkey PRIMARY KEY (api_key_id, bucket_ms, start);
ALTER TABLE operator_endpoint ADD CONSTRAINT operator_endpoint_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE operator_endpoint ADD CONSTRAINT operator_endpoint_pkey PRIMARY KEY (api_key_id);
ALTER TABLE operator_endpoint ADD CONSTRAINT operator_endpoint_receiver_id_fkey FOREIGN KEY (receiver_id) REFERENCES receiver(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE portal_session ADD CONSTRAINT portal_session_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE portal_session ADD CONSTRAINT portal_session_capabilities_check CHECK ((('read'::text = ANY (capabilities)) AND (capabilities <@ ARRAY['read'::text, 'replay'::text, 'rotate'::text, 'edit'::text])));
ALTER TABLE portal_session ADD CONSTRAINT portal_session_pkey PRIMARY KEY (id);
ALTER TABLE portal_session ADD CONSTRAINT portal_session_receiver_id_fkey FOREIGN KEY (receiver_id) REFERENCES receiver(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE receiver ADD CONSTRAINT receiver_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE receiver ADD CONSTRAINT receiver_disabled_check CHECK ((disabled = (disabled_at IS NOT NULL)));
ALTER TABLE receiver ADD CONSTRAINT receiver_pkey PRIMARY KEY (id);
ALTER TABLE receiver_credential ADD CONSTRAINT receiver_credential_any_check CHECK (((auth_type IS NOT NULL) OR (tls IS NOT NULL)));
ALTER TABLE receiver_credential ADD CONSTRAINT receiver_credential_auth_type_check CHECK ((auth_type = ANY (ARRAY['basic'::text, 'bearer'::text, 'oauth2'::text])));
ALTER TABLE receiver_credential ADD CONSTRAINT receiver_credential_pkey PRIMARY KEY (receiver_id);
ALTER TABLE receiver_credential ADD CONSTRAINT receiver_credential_receiver_id_fkey FOREIGN KEY (receiver_id) REFERENCES receiver(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE receiver_credential ADD CONSTRAINT receiver_credential_version_key UNIQUE (receiver_id, version);
ALTER TABLE receiver_token ADD CONSTRAINT receiver_token_credential_fkey FOREIGN KEY (receiver_id, version) REFERENCES receiver_credential(receiver_id, version) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE receiver_token ADD CONSTRAINT receiver_token_pkey PRIMARY KEY (receiver_id, version);
ALTER TABLE receiver_token ADD CONSTRAINT receiver_token_sealed_check CHECK ((((token_id IS NULL) = (sealed IS NULL)) AND ((sealed IS NULL) = (key_id IS NULL)) AND ((sealed IS NULL) = (expires_at IS NULL)) AND ((sealed IS NULL) = (refresh_at IS NULL))));
ALTER TABLE recovery ADD CONSTRAINT recovery_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE recovery ADD CONSTRAINT recovery_id_fkey FOREIGN KEY (id) REFERENCES task(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE recovery ADD CONSTRAINT recovery_pkey PRIMARY KEY (id);
ALTER TABLE recovery ADD CONSTRAINT recovery_priority_check CHECK (((priority >= 0) AND (priority <= 2)));
ALTER TABLE recovery ADD CONSTRAINT recovery_statuses_check CHECK (((cardinality(statuses) >= 1) AND (statuses <@ ARRAY['failed'::text, 'cancelled'::text])));
ALTER TABLE signing_secret ADD CONSTRAINT signing_secret_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE signing_secret ADD CONSTRAINT signing_secret_owner_check CHECK ((num_nonnulls(receiver_id, destination) = 1));
ALTER TABLE signing_secret ADD CONSTRAINT signing_secret_pkey PRIMARY KEY (id);
ALTER TABLE signing_secret ADD CONSTRAINT signing_secret_receiver_id_fkey FOREIGN KEY (receiver_id) REFERENCES receiver(id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE task ADD CONSTRAINT task_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_key(id) ON UPDATE CASCADE ON DELETE RESTRICT;
ALTER TABLE task ADD CONSTRAINT task_kind_check CHECK ((kind = ANY (ARRAY['receiver.disable'::text, 'receiver.enable'::text, 'receiver.delete'::text, 'batch.retry'::text, 'recovery'::text])));
ALTER TABLE task ADD CONSTRAINT task_pkey PRIMARY KEY (id);
ALTER TABLE task ADD CONSTRAINT task_status_check CHECK ((status = ANY (ARRAY['running'::text, 'finished'::text, 'superseded'::text, 'cancelled'::text])));

CREATE UNIQUE INDEX api_key_hash_key ON public.api_key USING btree (hash);
CREATE UNIQUE INDEX api_key_pkey ON public.api_key USING btree (id);
CREATE INDEX attempt_api_key_id_started_at_idx ON ONLY public.attempt USING btree (api_key_id, started_at) INCLUDE (host, outcome, duration_ms);
CREATE INDEX attempt_callback_id_number_idx ON ONLY public.attempt USING btree (callback_id, number);
CREATE UNIQUE INDEX attempt_pkey ON ONLY public.attempt USING btree (id, started_at);
CREATE INDEX attempt_receiver_idx ON ONLY public.attempt USING btree (receiver_id, started_at) INCLUDE (outcome, duration_ms) WHERE (receiver_id IS NOT NULL);
CREATE INDEX batch_api_key_id_created_at_idx ON public.batch USING btree (api_key_id, created_at);
CREATE UNIQUE INDEX batch_api_key_id_idempotency_key_key ON public.batch USING btree (api_key_id, idempotency_key);
CREATE INDEX batch_completed_idx ON public.batch USING btree (completed_at) WHERE (completed_at IS NOT NULL);
CREATE INDEX batch_key_open_idx ON public.batch USING btree (api_key_id) INCLUDE (body_bytes) WHERE (completed_at IS NULL);
CREATE INDEX batch_open_idx ON public.batch USING btree (created_at) WHERE (completed_at IS NULL);
CREATE UNIQUE INDEX batch_pkey ON public.batch USING btree (id);
CREATE INDEX callback_api_key_id_created_at_idx ON ONLY public.callback USING btree (api_key_id, created_at);
CREATE INDEX callback_batch_id_status_idx ON ONLY public.callback USING btree (batch_id, status);
CREATE INDEX callback_due_idx ON ONLY public.callback USING btree (next_attempt_at) WHERE (status = 'pending'::text);
CREATE INDEX callback_finished_idx ON ONLY public.callback USING btree (completed_at) WHERE (status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text]));
CREATE INDEX callback_key_due_idx ON ONLY public.callback USING btree (api_key_id, priority, next_attempt_at) WHERE (status = 'pending'::text);
CREATE INDEX callback_lease_idx ON ONLY public.callback USING btree (lease_expires_at) WHERE (lease_expires_at IS NOT NULL);
CREATE INDEX callback_ordering_idx ON ONLY public.callback USING btree (api_key_id, ordering_key, id) WHERE ((ordering_key IS NOT NULL) AND (status = ANY (ARRAY['pending'::text, 'in_flight'::text])));
CREATE INDEX callback_pending_host_idx ON ONLY public.callback USING btree (host, next_attempt_at) WHERE (status = 'pending'::text);
CREATE UNIQUE INDEX callback_pkey ON ONLY public.callback USING btree (id, done_at);
CREATE INDEX callback_receiver_idx ON ONLY public.callback USING btree (receiver_id, id) WHERE (receiver_id IS NOT NULL);
CREATE INDEX callback_receiver_open_idx ON ONLY public.callback USING btree (receiver_id, status, held) WHERE ((receiver_id IS NOT NULL) AND (status = ANY (ARRAY['pending'::text, 'in_flight'::text])));
CREATE INDEX callback_recovery_idx ON ONLY public.callback USING btree (recovery_id, status) WHERE (recovery_id IS NOT NULL);
CREATE INDEX callback_unsuccessful_idx ON ONLY public.callback USING btree (api_key_id, status, id) WHERE (status = ANY (ARRAY['failed'::text, 'cancelled'::text]));
CREATE UNIQUE INDEX event_api_key_id_event_id_key ON public.event USING btree (api_key_id, event_id);
CREATE INDEX event_api_key_id_id_idx ON public.event USING btree (api_key_id, id);
CREATE INDEX event_api_key_id_type_id_idx ON public.event USING btree (api_key_id, type, id);
CREATE INDEX event_batch_id_idx ON public.event USING btree (batch_id);
CREATE UNIQUE INDEX event_pkey ON public.event USING btree (id);
CREATE UNIQUE INDEX event_subscription_pkey ON public.event_subscription USING btree (api_key_id, pattern, receiver_id);
CREATE INDEX event_subscription_receiver_idx ON public.event_subscription USING btree (receiver_id);
CREATE UNIQUE INDEX event_type_pkey ON public.event_type USING btree (api_key_id, name);
CREATE INDEX gone_endpoint_host_idx ON public.gone_endpoint USING btree (host);
CREATE UNIQUE INDEX gone_endpoint_pkey ON public.gone_endpoint USING btree (api_key_id, url);
CREATE INDEX host_limited_idx ON public.host USING btree (host) WHERE ((in_flight > 0) OR (breaker_state <> 'closed'::text) OR (consecutive_failures > 0) OR (max_in_flight IS NOT NULL) OR (rate_per_sec IS NOT NULL));
CREATE UNIQUE INDEX host_pkey ON public.host USING btree (host);
CREATE UNIQUE INDEX host_key_breaker_pkey ON public.host_key_breaker USING btree (host, api_key_id);
CREATE UNIQUE INDEX latency_rollup_pkey ON public.latency_rollup USING btree (api_key_id, bucket_ms, start);
CREATE INDEX latency_rollup_start_idx ON public.latency_rollup USING btree (start);
CREATE UNIQUE INDEX operator_endpoint_pkey ON public.operator_endpoint USING btree (api_key_id);
CREATE UNIQUE INDEX operator_endpoint_receiver_id_key ON public.operator_endpoint USING btree (receiver_id);
CREATE UNIQUE INDEX portal_session_pkey ON public.portal_session USING btree (id);
CREATE INDEX portal_session_receiver_idx ON public.portal_session USING btree (receiver_id);
CREATE UNIQUE INDEX receiver_api_key_id_name_key ON public.receiver USING btree (api_key_id, name);
CREATE INDEX receiver_failing_idx ON public.receiver USING btree (failing_since) WHERE ((failing_since IS NOT NULL) AND (NOT disabled));
CREATE UNIQUE INDEX receiver_pkey ON public.receiver USING btree (id);
CREATE UNIQUE INDEX receiver_credential_pkey ON public.receiver_credential USING btree (receiver_id);
CREATE UNIQUE INDEX receiver_credential_version_key ON public.receiver_credential USING btree (receiver_id, version);
CREATE UNIQUE INDEX receiver_token_pkey ON public.receiver_token USING btree (receiver_id, version);
CREATE UNIQUE INDEX recovery_pkey ON public.recovery USING btree (id);
CREATE INDEX recovery_unnotified_idx ON public.recovery USING btree (id) WHERE (notified_at IS NULL);
CREATE UNIQUE INDEX signing_secret_destination_current_key ON public.signing_secret USING btree (api_key_id, destination) WHERE ((expires_at IS NULL) AND (destination IS NOT NULL));
CREATE INDEX signing_secret_destination_idx ON public.signing_secret USING btree (api_key_id, destination) WHERE (destination IS NOT NULL);
CREATE INDEX signing_secret_expires_idx ON public.signing_secret USING btree (expires_at) WHERE (expires_at IS NOT NULL);
CREATE UNIQUE INDEX signing_secret_pkey ON public.signing_secret USING btree (id);
CREATE UNIQUE INDEX signing_secret_receiver_current_key ON public.signing_secret USING btree (receiver_id) WHERE ((expires_at IS NULL) AND (receiver_id IS NOT NULL));
CREATE INDEX signing_secret_receiver_id_idx ON public.signing_secret USING btree (receiver_id) WHERE (receiver_id IS NOT NULL);
CREATE INDEX task_finished_idx ON public.task USING btree (finished_at) WHERE (finished_at IS NOT NULL);
CREATE INDEX task_open_idx ON public.task USING btree (updated_at) WHERE (status = 'running'::text);
CREATE UNIQUE INDEX task_pkey ON public.task USING btree (id);
CREATE INDEX task_receiver_idx ON public.task USING btree (receiver_id, created_at) WHERE (receiver_id IS NOT NULL);

CREATE TRIGGER attempt_late_rollups AFTER INSERT ON public.attempt FOR EACH ROW WHEN ((new.started_at < (now() - '00:10:00'::interval))) EXECUTE FUNCTION latency_rollups_of_late_attempt();
CREATE TRIGGER attempt_late_rollups AFTER INSERT ON public.attempt_before FOR EACH ROW WHEN ((new.started_at < (now() - '00:10:00'::interval))) EXECUTE FUNCTION latency_rollups_of_late_attempt();
CREATE TRIGGER callback_attempts_delete AFTER DELETE ON public.callback REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attempts_of_deleted_callbacks();
CREATE TRIGGER callback_host_in_flight_delete AFTER DELETE ON public.callback REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION host_in_flight_after_delete();
CREATE TRIGGER callback_host_in_flight_update AFTER UPDATE ON public.callback REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION host_in_flight_after_update();
CREATE TRIGGER callback_host_rows AFTER INSERT ON public.callback REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION host_rows_for_new_callbacks();
CREATE TRIGGER receiver_event_subscriptions AFTER INSERT OR UPDATE OF event_types ON public.receiver FOR EACH ROW EXECUTE FUNCTION receiver_event_subscriptions();

CREATE OR REPLACE FUNCTION public.attempts_of_deleted_callbacks()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- = ANY(array): an index probe per callback whatever the planner thinks of old_rows.
  DELETE FROM attempt WHERE callback_id = ANY (ARRAY(SELECT o.id FROM old_rows o));
  RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION public.host_in_flight_after_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE deltas JSONB;
BEGIN
  SELECT jsonb_object_agg(host, -n) INTO deltas FROM (
    SELECT o.host, count(*) AS n FROM old_rows o WHERE o.status = 'in_flight' GROUP BY o.host
  ) d;
  IF deltas IS NOT NULL THEN PERFORM host_in_flight_apply(deltas); END IF;
  RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION public.host_in_flight_after_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE deltas JSONB;
BEGIN
  SELECT jsonb_object_agg(host, delta) INTO deltas FROM (
    SELECT host, sum(delta) AS delta FROM (
      SELECT o.host, -1 AS delta FROM old_rows o WHERE o.status = 'in_flight'
      UNION ALL
      SELECT n.host, 1 FROM new_rows n WHERE n.status = 'in_flight'
    ) x GROUP BY host HAVING sum(delta) <> 0
  ) d;
  IF deltas IS NOT NULL THEN PERFORM host_in_flight_apply(deltas); END IF;
  RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION public.host_in_flight_apply(deltas jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE hosts TEXT[] := ARRAY(SELECT jsonb_object_keys(deltas));
BEGIN
  PERFORM 1 FROM host h WHERE h.host = ANY(hosts) ORDER BY h.host FOR UPDATE;
  UPDATE host h SET in_flight = greatest(0, h.in_flight + (deltas ->> h.host)::int)
  WHERE h.host = ANY(hosts);
END $function$;

CREATE OR REPLACE FUNCTION public.host_rows_for_new_callbacks()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO host (host)
  SELECT DISTINCT n.host FROM new_rows n WHERE NOT EXISTS (SELECT 1 FROM host h WHERE h.host = n.host) ORDER BY 1
  ON CONFLICT (host) DO NOTHING;
  RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION public.latency_rollup_closed_before()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$ SELECT now() - interval '10 minutes' $function$;

CREATE OR REPLACE FUNCTION public.latency_rollups_of_late_attempt()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM latency_rollup r
  WHERE r.api_key_id = NEW.api_key_id AND r.start <= NEW.started_at AND r.start > NEW.started_at - interval '1 day'
    AND r.start + r.bucket_ms * interval '1 millisecond' > NEW.started_at;
  RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION public.operator_uuidv7()
 RETURNS uuid
 LANGUAGE sql
AS $function$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
         52, 1), 53, 1), 'hex')::uuid
$function$;

CREATE OR REPLACE FUNCTION public.receiver_event_subscriptions()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.event_types IS NOT DISTINCT FROM OLD.event_types THEN
    RETURN NULL;
  END IF;
  DELETE FROM event_subscription WHERE receiver_id = NEW.id AND pattern <> ALL (NEW.event_types);
  INSERT INTO event_subscription (api_key_id, pattern, receiver_id)
    SELECT NEW.api_key_id, p, NEW.id FROM unnest(NEW.event_types) AS p
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END $function$;
