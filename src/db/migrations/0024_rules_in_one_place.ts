import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Each rule written once (docs/data-model.md).
 *
 * - **A receiver's host** (`host[:port]`, lowercase: the unit of the per-host cap) is `anchord_url_host(url)`, one
 *   SQL function. The two triggers that route deliveries and fan-outs call it, and so do the node's own statements
 *   that insert deliveries (src/webhooks/DeliveryClaims.ts, TestEvents.ts): the expression used to be written in
 *   each trigger and mirrored in TypeScript (`HOST_SQL`). IMMUTABLE, one expression, not STRICT: the planner
 *   inlines it, so it costs what the expression cost.
 * - **`anchor.confirmed` is assembled once, in the node** (src/anchoring/anchorViews.ts `anchorConfirmedPayloads`,
 *   in the stored form of src/outbox/events.ts). The dispatcher builds every delivery's body from it (assembled in
 *   jsonb it cost ~80 µs per record, docs/benchmarks.md). The copy in SQL that 0012 kept for operators
 *   (`anchord_anchor_confirmed`, `anchord_event_anchor`), held equal to it by a test, goes. The views
 *   `anchor_confirmed_events` and `all_events` still list every derived event (its id, account, record, kind and
 *   time); a derived event's `payload` is NULL there: the record's anchors are in `anchors` / `anchor_batches`
 *   and `GET /v1/records/{id}`, and the body sent is in the delivery log.
 *
 * The trigger functions are written whole, as of this version (a migration never changes with the code).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_url_host(url text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
      SELECT COALESCE(lower(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), '')
    $$`)

  // 0013's function: the host through anchord_url_host.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      created integer;
    BEGIN
      INSERT INTO webhook_deliveries (id, event_seq, event_id, account_id, record_id, environment, target, url, host, next_attempt_at)
      SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), t.id, t.event_id, t.account_id, t.record_id, t.environment,
             t.target, t.url, anchord_url_host(t.url), now()
      FROM (
        SELECT e.id, e.event_id, e.account_id, e.record_id, r.environment,
               CASE WHEN NULLIF(r.webhook_url, '') IS NOT NULL THEN 'record' ELSE 'account' END AS target,
               COALESCE(NULLIF(r.webhook_url, ''), s.url) AS url
        FROM new_events e
        JOIN records r ON r.id = e.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id AND s.environment = r.environment
        WHERE NULLIF(r.webhook_url, '') IS NOT NULL
           OR (s.enabled AND NULLIF(s.url, '') IS NOT NULL AND e.kind = ANY (s.events))
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
  // 0013's function: the host through anchord_url_host.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_batch_event_fanouts() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      fanned integer;
    BEGIN
      INSERT INTO webhook_fanouts (batch_event_id, record_ids, hosts)
      SELECT t.be, array_agg(t.record_id ORDER BY t.ord), array_agg(t.host ORDER BY t.ord) FROM (
        SELECT e.id AS be, x.record_id, x.ord, (row_number() OVER (PARTITION BY e.id ORDER BY x.ord) - 1) / 128 AS part,
               anchord_url_host(COALESCE(NULLIF(r.webhook_url, ''), s.url)) AS host
        FROM new_batch_events e
        CROSS JOIN LATERAL unnest(e.record_ids) WITH ORDINALITY AS x(record_id, ord)
        JOIN records r ON r.id = x.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id AND s.environment = r.environment
        WHERE NULLIF(r.webhook_url, '') IS NOT NULL
           OR (s.enabled AND NULLIF(s.url, '') IS NOT NULL AND 'anchor.confirmed' = ANY (s.events))
      ) t
      GROUP BY t.be, t.part ORDER BY t.be, t.part;
      GET DIAGNOSTICS fanned = ROW_COUNT;
      IF fanned > 0 THEN
        PERFORM pg_notify('anchord_webhooks', '');
      END IF;
      RETURN NULL;
    END
    $$`)

  // The SQL copy of anchor.confirmed goes; the views keep listing the derived events, without a payload.
  yield* sql`DROP VIEW all_events`
  yield* sql`DROP VIEW anchor_confirmed_events`
  yield* sql`DROP FUNCTION anchord_anchor_confirmed(bigint[], text[])`
  yield* sql`DROP FUNCTION anchord_event_anchor(anchors, anchor_batches)`
  yield* sql`
    CREATE VIEW anchor_confirmed_events AS
    SELECT be.id, anchord_event_id(be.id, x.record_id) AS event_id, be.account_id, x.record_id,
      'anchor.confirmed'::text AS kind, NULL::jsonb AS payload, be.created_at
    FROM batch_events be
    CROSS JOIN LATERAL unnest(be.record_ids) AS x(record_id)`
  yield* sql`
    CREATE VIEW all_events AS
      SELECT id, event_id, account_id, record_id, kind, payload, created_at FROM events
      UNION ALL
      SELECT id, event_id, account_id, record_id, kind, payload, created_at FROM anchor_confirmed_events`
})
