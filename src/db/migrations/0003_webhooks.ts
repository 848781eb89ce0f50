import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Webhooks (SPEC 5): one delivery per (event, target) with its durable retry state, the log of
 * every attempt, and the secret-rotation columns of accounts.
 *
 * Deliveries are created by a trigger on the `events` outbox, so whoever inserts an event (PATCH,
 * DELETE, the anchoring pipeline) gets its delivery and the `anchord_webhooks` NOTIFY in the same
 * transaction, with nothing to call: the dispatcher is only woken after COMMIT, and a rolled-back
 * change leaves neither an event nor a delivery.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Rotation: `webhook_secret` is always the newest secret. During the overlap (24 h after
  // `webhook_secret_rotated_at`, until confirmed) the previous secret still signs x-webhook-signature.
  yield* sql`
    ALTER TABLE accounts
      ADD COLUMN webhook_secret_previous   text,
      ADD COLUMN webhook_secret_rotated_at timestamptz`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      seq              bigserial PRIMARY KEY,
      id               text NOT NULL UNIQUE,
      event_seq        bigint NOT NULL REFERENCES events (id),
      event_id         text NOT NULL,
      account_id       text NOT NULL REFERENCES accounts (id),
      record_id        text NOT NULL,
      environment      text NOT NULL CHECK (environment IN ('test', 'live')),
      -- 'record': the record's webhookUrl; 'account': the account's global webhook
      target           text NOT NULL CHECK (target IN ('record', 'account')),
      url              text NOT NULL,
      -- the URL's authority (host[:port], lowercase): the unit of the per-receiver in-flight cap
      host             text NOT NULL,
      state            text NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'SUCCEEDED', 'FAILED')),
      -- redelivery rounds: 0 is the original ladder, each redeliver starts a new one
      round            integer NOT NULL DEFAULT 0,
      -- attempts completed in this round = the number of the next attempt (0..5)
      attempts         integer NOT NULL DEFAULT 0,
      -- when the delivery may next be claimed: the attempt's due time, or the claim's lease expiry
      next_attempt_at  timestamptz,
      locked_until     timestamptz,
      locked_by        text,
      claim_token      text,
      -- rendered once (first claim) and reused by every retry: same bytes, same signature
      body             text,
      signature        text,
      signature_next   text,
      headers          jsonb,
      last_status_code integer,
      last_error       text,
      created_at       timestamptz NOT NULL DEFAULT now(),
      updated_at       timestamptz NOT NULL DEFAULT now(),
      delivered_at     timestamptz
    ) WITH (fillfactor = 70)`
  // fillfactor 70: storing the rendered body changes no indexed column, so it can be a HOT update.
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'PENDING'`
  yield* sql`CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, environment, seq DESC)`
  yield* sql`CREATE INDEX webhook_deliveries_record ON webhook_deliveries (record_id)`
  // Claims in progress (outcomes clear locked_until): small, read by every claim for the per-host cap.
  yield* sql`CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (host) WHERE locked_until IS NOT NULL`
  yield* sql`
    CREATE TABLE webhook_attempts (
      id           bigserial PRIMARY KEY,
      delivery_seq bigint NOT NULL REFERENCES webhook_deliveries (seq),
      round        integer NOT NULL,
      attempt      integer NOT NULL CHECK (attempt BETWEEN 0 AND 5),
      started_at   timestamptz NOT NULL,
      status_code  integer,
      latency_ms   integer NOT NULL,
      error        text,
      -- the ladder's delay scheduled after this attempt failed (null: succeeded or last attempt)
      retry_in_ms  bigint,
      node_id      text NOT NULL
    )`
  yield* sql`CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_seq, id)`
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      created integer;
    BEGIN
      INSERT INTO webhook_deliveries (id, event_seq, event_id, account_id, record_id, environment, target, url, host, next_attempt_at)
      SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), t.id, t.event_id, t.account_id, t.record_id, t.environment,
             t.target, t.url, COALESCE(lower(substring(t.url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), ''), now()
      FROM (
        SELECT e.id, e.event_id, e.account_id, e.record_id, r.environment,
               CASE WHEN NULLIF(r.webhook_url, '') IS NOT NULL THEN 'record' ELSE 'account' END AS target,
               COALESCE(NULLIF(r.webhook_url, ''), a.webhook_url) AS url
        FROM new_events e
        JOIN records r ON r.id = e.record_id
        JOIN accounts a ON a.id = e.account_id
        WHERE NULLIF(r.webhook_url, '') IS NOT NULL
           OR (a.webhook_enabled AND NULLIF(a.webhook_url, '') IS NOT NULL AND e.kind = ANY (a.webhook_events))
      ) t
      ORDER BY t.id;
      GET DIAGNOSTICS created = ROW_COUNT;
      -- Delivered to listeners only after COMMIT (and never for a rolled-back transaction).
      IF created > 0 THEN
        PERFORM pg_notify('anchord_webhooks', '');
      END IF;
      RETURN NULL;
    END
    $$`)
  yield* sql`
    CREATE TRIGGER events_webhook_deliveries AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION anchord_webhook_deliveries()`
})
