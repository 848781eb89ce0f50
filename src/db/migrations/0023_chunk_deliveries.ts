import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * One delivery row per chunk (docs/webhooks.md "Chunks"). When a leased fan-out chunk's records
 * succeed at their first attempt, their outcomes are kept in ONE `webhook_chunk_deliveries` row per (batch event,
 * environment, receiver URL) of the chunk, with arrays per record: the record, its delivery id and event id, its
 * `seq` drawn from the deliveries' own sequence (so each keeps an id and its place in the log's order), status
 * code, latency and start time. A record whose first attempt failed still gets its `webhook_deliveries` row, as
 * before (retry ladder, attempt log, stored body).
 *
 * The delivery log reads both: the API's statements address each table through its own index (below); the views
 * `webhook_delivery_log` (every delivery, one row each, in the columns of `webhook_deliveries`) and
 * `webhook_attempt_log` (now with the chunk records' attempts) are for operators' SQL.
 *
 * A chunk entry leaves its row ("split out", `anchord_chunk_split`) when it must change: a redelivery (its success
 * moves to the attempt log as any redelivered success does) and a hard delete (the entry erased as any delivery
 * is). The row keeps the entry's id, seq, times and outcome. Retention deletes chunk rows whole.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_chunk_deliveries (
      id             bigserial PRIMARY KEY,
      batch_event_id bigint NOT NULL,
      account_id     text NOT NULL,
      environment    text NOT NULL CHECK (environment IN ('test', 'live')),
      target         text NOT NULL CHECK (target IN ('record', 'account')),
      url            text NOT NULL,
      host           text NOT NULL,
      -- the node that made the attempts
      node_id        text NOT NULL,
      created_at     timestamptz NOT NULL DEFAULT now(),
      delivered_at   timestamptz NOT NULL,
      -- one element per record, in the chunk's order
      record_ids     text[] NOT NULL,
      ids            text[] NOT NULL,
      event_ids      text[] NOT NULL,
      seqs           bigint[] NOT NULL,
      status_codes   integer[] NOT NULL,
      latencies_ms   integer[] NOT NULL,
      started_at     timestamptz[] NOT NULL,
      -- the bounds of seqs: the list's keyset order and the lookup of an entry by its seq
      min_seq        bigint NOT NULL,
      max_seq        bigint NOT NULL,
      CHECK (cardinality(record_ids) > 0 AND cardinality(ids) = cardinality(record_ids)
        AND cardinality(event_ids) = cardinality(record_ids) AND cardinality(seqs) = cardinality(record_ids)
        AND cardinality(status_codes) = cardinality(record_ids) AND cardinality(latencies_ms) = cardinality(record_ids)
        AND cardinality(started_at) = cardinality(record_ids))
    )`
  // The list, newest first, by the largest seq of a row: merged with webhook_deliveries_account.
  yield* sql`CREATE INDEX webhook_chunk_deliveries_account ON webhook_chunk_deliveries (account_id, environment, max_seq DESC)`
  // An entry by its seq (attempts of a page, rows straddling a cursor): the row whose range holds it.
  yield* sql`CREATE INDEX webhook_chunk_deliveries_seqs ON webhook_chunk_deliveries USING gist (int8range(min_seq, max_seq, '[]'))`
  // An entry by record id or event id (the list's filters, a hard delete): one GIN index over the two (their forms
  // never collide: 24 hex, evt_…). Not by delivery id: a chunk entry's id carries its seq (DeliveryClaims.completeChunk),
  // found through the seqs' index above, which spares a third of this index's entries (its cost is per entry).
  yield* sql`CREATE INDEX webhook_chunk_deliveries_keys ON webhook_chunk_deliveries USING gin ((record_ids || event_ids))`

  // Every delivery, one row each (operators' SQL; the API reads the tables through their indexes).
  yield* sql`
    CREATE VIEW webhook_delivery_log AS
      SELECT seq, id, event_seq, batch_event_id, event_id, account_id, record_id, environment, target, url, host, state,
        round, attempts, next_attempt_at, locked_until, locked_by, claim_token, body, signature, signature_next, headers,
        last_status_code, last_error, created_at, updated_at, delivered_at, success_started_at, success_latency_ms,
        success_node_id, erased, NULL::bigint AS chunk_id
      FROM webhook_deliveries
      UNION ALL
      SELECT u.seq, u.id, NULL::bigint, c.batch_event_id, u.event_id, c.account_id, u.record_id, c.environment, c.target,
        c.url, c.host, 'SUCCEEDED', 0, 1, NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::text,
        NULL::text, NULL::text, NULL::jsonb, u.status_code, NULL::text, c.created_at, c.delivered_at, c.delivered_at,
        u.started_at, u.latency_ms, c.node_id, false, c.id
      FROM webhook_chunk_deliveries c
      CROSS JOIN LATERAL unnest(c.seqs, c.ids, c.event_ids, c.record_ids, c.status_codes, c.latencies_ms, c.started_at)
        AS u(seq, id, event_id, record_id, status_code, latency_ms, started_at)`
  yield* sql`
    CREATE OR REPLACE VIEW webhook_attempt_log AS
      SELECT delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id
      FROM webhook_attempts
      UNION ALL
      SELECT seq, round, attempts - 1, success_started_at, last_status_code, success_latency_ms, NULL, NULL, success_node_id
      FROM webhook_deliveries WHERE success_started_at IS NOT NULL
      UNION ALL
      SELECT u.seq, 0, 0, u.started_at, u.status_code, u.latency_ms, NULL, NULL, c.node_id
      FROM webhook_chunk_deliveries c
      CROSS JOIN LATERAL unnest(c.seqs, c.status_codes, c.latencies_ms, c.started_at) AS u(seq, status_code, latency_ms, started_at)`

  // Splits entries (by delivery id or record id) out of a chunk row into webhook_deliveries rows, SUCCEEDED at
  // attempt 0 as completeChunk wrote them before this migration: same seq, id, times, outcome, node. The seqs
  // split out.
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_chunk_split(p_chunk bigint, p_keys text[]) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
    DECLARE
      c webhook_chunk_deliveries%ROWTYPE;
      left_over integer;
    BEGIN
      SELECT * INTO c FROM webhook_chunk_deliveries WHERE id = p_chunk FOR UPDATE;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      RETURN QUERY
        INSERT INTO webhook_deliveries (seq, id, batch_event_id, event_id, account_id, record_id, environment, target, url,
          host, state, round, attempts, next_attempt_at, last_status_code, last_error, created_at, updated_at, delivered_at,
          success_started_at, success_latency_ms, success_node_id)
        SELECT u.seq, u.id, c.batch_event_id, u.event_id, c.account_id, u.record_id, c.environment, c.target, c.url, c.host,
          'SUCCEEDED', 0, 1, NULL, u.status_code, NULL, c.created_at, c.delivered_at, c.delivered_at,
          u.started_at, u.latency_ms, c.node_id
        FROM unnest(c.seqs, c.ids, c.event_ids, c.record_ids, c.status_codes, c.latencies_ms, c.started_at)
          WITH ORDINALITY AS u(seq, id, event_id, record_id, status_code, latency_ms, started_at, o)
        WHERE u.id = ANY (p_keys) OR u.record_id = ANY (p_keys)
        ORDER BY u.o
        RETURNING seq;
      SELECT count(*) INTO left_over FROM unnest(c.ids, c.record_ids) AS u(id, record_id)
      WHERE NOT (u.id = ANY (p_keys) OR u.record_id = ANY (p_keys));
      IF left_over = 0 THEN
        DELETE FROM webhook_chunk_deliveries WHERE id = p_chunk;
        RETURN;
      END IF;
      UPDATE webhook_chunk_deliveries w SET
        record_ids = k.record_ids, ids = k.ids, event_ids = k.event_ids, seqs = k.seqs, status_codes = k.status_codes,
        latencies_ms = k.latencies_ms, started_at = k.started_at, min_seq = k.min_seq, max_seq = k.max_seq
      FROM (
        SELECT array_agg(u.record_id ORDER BY u.o) AS record_ids, array_agg(u.id ORDER BY u.o) AS ids,
          array_agg(u.event_id ORDER BY u.o) AS event_ids, array_agg(u.seq ORDER BY u.o) AS seqs,
          array_agg(u.status_code ORDER BY u.o) AS status_codes, array_agg(u.latency_ms ORDER BY u.o) AS latencies_ms,
          array_agg(u.started_at ORDER BY u.o) AS started_at, min(u.seq) AS min_seq, max(u.seq) AS max_seq
        FROM unnest(c.seqs, c.ids, c.event_ids, c.record_ids, c.status_codes, c.latencies_ms, c.started_at)
          WITH ORDINALITY AS u(seq, id, event_id, record_id, status_code, latency_ms, started_at, o)
        WHERE NOT (u.id = ANY (p_keys) OR u.record_id = ANY (p_keys))
      ) k
      WHERE w.id = p_chunk;
    END
    $$`)
})
