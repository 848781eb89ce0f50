import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * `anchor.confirmed` deliveries are fanned out by the dispatcher instead of by the trigger
 * (docs/webhooks.md "How it works"). One confirmation writes a batch's worth of events in one statement;
 * the trigger now writes one `webhook_fanouts` row per 128 of those that have a target (the statement's event
 * ids and each one's receiver, chosen by the same rule as before) and notifies.
 * The dispatcher takes that row under `FOR UPDATE SKIP LOCKED`, reads the events with their records and
 * the account's settings, renders and signs each body in the node, and inserts the deliveries already
 * rendered and claimed by itself — in one transaction that also consumes the row's ids — then sends.
 *
 * Per record that is one INSERT instead of four writes (the trigger's INSERT, the claim's UPDATE, the
 * render read, the UPDATE storing body and signature). Nothing a receiver or the delivery log sees
 * changes: one delivery per event and target, the body stored durably before the first send, the same
 * event ids. Every other kind (record.updated, record.deleted, anchor.failed) keeps the trigger's
 * deliveries: they come one or a few at a time, and their PENDING delivery is in the log at once.
 *
 * Attempts: a successful attempt is kept on its delivery row (`success_*` columns, with `round`,
 * `attempts` and `last_status_code`), failed ones in `webhook_attempts` as before; the view
 * `webhook_attempt_log` shows both, as the one log. A redelivery moves the kept success into the table.
 *
 * Whether an event has a target is decided by the trigger, as before; the URL itself is read when the
 * dispatcher fans the row out, normally milliseconds after the commit.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_fanouts (
      id          bigserial PRIMARY KEY,
      -- the events still to fan out (consumed from the front, the row deleted when empty), and each
      -- one's receiver (host[:port]): the unit of the per-host cap
      event_seqs  bigint[] NOT NULL,
      hosts       text[] NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    )`
  // A successful attempt is kept on its delivery row instead of a webhook_attempts row (one INSERT less
  // per delivery); the log the API serves, and operators' SQL, read the view, which shows both.
  yield* sql`
    ALTER TABLE webhook_deliveries
      ADD COLUMN success_started_at timestamptz,
      ADD COLUMN success_latency_ms integer,
      ADD COLUMN success_node_id    text`
  yield* sql`
    CREATE VIEW webhook_attempt_log AS
      SELECT delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id
      FROM webhook_attempts
      UNION ALL
      SELECT seq, round, attempts - 1, success_started_at, last_status_code, success_latency_ms, NULL, NULL, success_node_id
      FROM webhook_deliveries WHERE success_started_at IS NOT NULL`
  // An anchor.confirmed payload (~2 KB with its proofs) is compressed when stored; lz4 does it about three
  // times faster than the default pglz and smaller (docs/benchmarks.md). Servers built without
  // lz4 (the embedded one) keep pglz.
  yield* sql.unsafe(`
    DO $$
    BEGIN
      ALTER TABLE events ALTER COLUMN payload SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported THEN
      NULL;
    END
    $$`)
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      created integer;
      fanned integer;
    BEGIN
      -- rows of at most 128 events: a fan-out step rewrites only the row it takes
      INSERT INTO webhook_fanouts (event_seqs, hosts)
      SELECT array_agg(t.id ORDER BY t.id), array_agg(t.host ORDER BY t.id) FROM (
        SELECT e.id, (row_number() OVER (ORDER BY e.id) - 1) / 128 AS part,
               COALESCE(lower(substring(COALESCE(NULLIF(r.webhook_url, ''), s.url)
                 FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), '') AS host
        FROM new_events e
        JOIN records r ON r.id = e.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id
        WHERE e.kind = 'anchor.confirmed' AND (NULLIF(r.webhook_url, '') IS NOT NULL
           OR (s.enabled AND NULLIF(s.url, '') IS NOT NULL AND e.kind = ANY (s.events)))
      ) t
      GROUP BY t.part ORDER BY t.part;
      GET DIAGNOSTICS fanned = ROW_COUNT;
      INSERT INTO webhook_deliveries (id, event_seq, event_id, account_id, record_id, environment, target, url, host, next_attempt_at)
      SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), t.id, t.event_id, t.account_id, t.record_id, t.environment,
             t.target, t.url, COALESCE(lower(substring(t.url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), ''), now()
      FROM (
        SELECT e.id, e.event_id, e.account_id, e.record_id, r.environment,
               CASE WHEN NULLIF(r.webhook_url, '') IS NOT NULL THEN 'record' ELSE 'account' END AS target,
               COALESCE(NULLIF(r.webhook_url, ''), s.url) AS url
        FROM new_events e
        JOIN records r ON r.id = e.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id
        WHERE e.kind <> 'anchor.confirmed' AND (NULLIF(r.webhook_url, '') IS NOT NULL
           OR (s.enabled AND NULLIF(s.url, '') IS NOT NULL AND e.kind = ANY (s.events)))
      ) t
      ORDER BY t.id;
      GET DIAGNOSTICS created = ROW_COUNT;
      -- Delivered to listeners only after COMMIT (and never for a rolled-back transaction).
      IF created > 0 OR fanned > 0 THEN
        PERFORM pg_notify('anchord_webhooks', '');
      END IF;
      RETURN NULL;
    END
    $$`)
})
