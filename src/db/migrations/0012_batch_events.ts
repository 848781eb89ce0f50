import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * One event row per confirmed batch and account (docs/design/per-batch-model.md). A
 * confirmation used to append one `events` row per record, each with the record's whole payload and
 * proofs (~2 KB): the costliest row of the pipeline (74–86 µs of PostgreSQL per record at 2,000/s). Now
 * it appends one `batch_events` row per account: the batch and the ids of the records it completed.
 *
 * Each record's `anchor.confirmed` is derived from the record, its anchors and the completing batch —
 * the same facts the stored payload held. The dispatcher builds it in the node from the record's anchors
 * (src/webhooks/DeliveryClaims.ts: assembled in jsonb it cost ~80 µs per record). For operators' SQL,
 * `anchord_anchor_confirmed(batch event ids, record ids)` assembles it in the stored form of
 * src/outbox/events.ts with the columns of an `events` row, and the views `anchor_confirmed_events`
 * (every derived event) and `all_events` (stored and derived, one row per record and event) show them.
 *
 * Event ids: `evt_` + the first 24 hex of sha256('<batch event id>:<record id>'), the form of every
 * event id, stable across fan-outs and redeliveries. `batch_events.id` draws from the events' sequence,
 * so a record's events still order by id.
 *
 * Fan-out: a trigger on `batch_events` writes `webhook_fanouts` rows (a batch event and up to 128 of its
 * records that have a receiver, with each one's host), as the `events` trigger did. The `events` trigger
 * goes back to inserting deliveries for every kind it sees (0007's form): no producer writes
 * anchor.confirmed into `events` any more; rows written before this migration, and their pending
 * fan-outs, are delivered through those plain deliveries.
 *
 * `records.announced`: an anchor.confirmed went out for an earlier anchoring of the record (set when
 * an ANCHORED record is re-queued). A soft-deleted record anchored again stays silent (docs/dev-chain.md);
 * this replaced a look for its old event in `events`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE batch_events (
      id          bigint PRIMARY KEY DEFAULT nextval('events_id_seq'),
      batch_id    bigint NOT NULL REFERENCES anchor_batches (id),
      account_id  text NOT NULL REFERENCES accounts (id),
      record_ids  text[] NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    )`
  // Rendering record.updated / record.deleted finds the record's last confirmation through its anchors' batches.
  yield* sql`CREATE INDEX batch_events_batch ON batch_events (batch_id)`
  yield* sql`ALTER TABLE records ADD COLUMN announced boolean NOT NULL DEFAULT false`
  yield* sql`
    UPDATE records SET announced = true
    WHERE status <> 'ANCHORED' AND id IN (SELECT record_id FROM events WHERE kind = 'anchor.confirmed')`

  // A derived event's id (STABLE as its body, so that it is inlined).
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_event_id(batch_event_id bigint, record_id text) RETURNS text LANGUAGE sql STABLE AS $$
      SELECT 'evt_' || left(encode(sha256(convert_to(batch_event_id::text || ':' || record_id, 'UTF8')), 'hex'), 24)
    $$`)
  // An anchor as events carry it: src/anchoring/anchorViews.ts toEventAnchor (a Fabric anchor's block is
  // null). STABLE as its body (to_char): an IMMUTABLE one would not be inlined, and cost a call per anchor.
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_event_anchor(a anchors, b anchor_batches) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object(
        'chainType', a.chain_type,
        'networkId', a.network_id,
        'batchId', CASE WHEN a.chain_type = 'evm' THEN to_jsonb(COALESCE(b.chain_batch_id, 0))
                        ELSE to_jsonb(COALESCE(b.chain_batch_ref, b.chain_batch_id::text, '')) END,
        'txHash', b.tx_hash,
        'blockNumber', CASE WHEN a.chain_type = 'evm' THEN to_jsonb(b.block_number) ELSE 'null'::jsonb END,
        'merkleRoot', b.merkle_root,
        'merkleProof', to_jsonb(a.merkle_proof),
        'anchoredAt', CASE WHEN a.confirmed AND b.anchored_at IS NOT NULL
                           THEN to_jsonb(to_char(b.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                           ELSE 'null'::jsonb END)
      || CASE WHEN a.chain_type = 'evm' AND b.contract_address IS NOT NULL THEN jsonb_build_object('contractAddress', b.contract_address) ELSE '{}'::jsonb END
      || CASE WHEN a.chain_type = 'evm' AND b.chain_id IS NOT NULL THEN jsonb_build_object('chainId', b.chain_id) ELSE '{}'::jsonb END
      || CASE WHEN a.chain_type = 'fabric' AND b.channel IS NOT NULL THEN jsonb_build_object('channel', b.channel) ELSE '{}'::jsonb END
      || CASE WHEN a.chain_type = 'fabric' AND b.chaincode IS NOT NULL THEN jsonb_build_object('chaincode', b.chaincode) ELSE '{}'::jsonb END
    $$`)
  // The anchor.confirmed events of given (batch event, record) pairs, with the columns of
  // an `events` row. The payload is the stored form of src/outbox/events.ts AnchorConfirmed: the primary
  // anchor's members on top (the record's networkId and anchoredAt win), the facts, status, and a hybrid
  // record's other anchor. Keyed by pairs so that reading a few events of a large batch event costs
  // primary-key lookups, never a walk of its record ids.
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_anchor_confirmed(batch_event_ids bigint[], record_ids text[])
    RETURNS TABLE (id bigint, event_id text, account_id text, record_id text, kind text, payload jsonb, created_at timestamptz)
    LANGUAGE sql STABLE AS $$
      SELECT be.id, anchord_event_id(be.id, r.id),
        be.account_id, r.id, 'anchor.confirmed'::text,
        COALESCE(p.primary_anchor, jsonb_build_object('chainType', r.chain_type))
          || jsonb_build_object(
            'recordId', r.id, 'hash', r.hash, 'recordChainType', r.chain_type, 'networkId', r.network_id,
            'anchoredAt', to_char(cb.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
            'anchors', COALESCE(p.anchors, '[]'::jsonb), 'status', 'ANCHORED')
          || CASE WHEN r.chain_type = 'hybrid' AND p.dual IS NOT NULL THEN jsonb_build_object('dualAnchor', p.dual) ELSE '{}'::jsonb END,
        be.created_at
      FROM unnest(batch_event_ids, record_ids) AS c(batch_event_id, record_id)
      JOIN batch_events be ON be.id = c.batch_event_id
      JOIN anchor_batches cb ON cb.id = be.batch_id
      JOIN records r ON r.id = c.record_id
      LEFT JOIN LATERAL (
        SELECT jsonb_agg(ea.j ORDER BY ea.chain_type, ea.network_id) AS anchors,
          (array_agg(ea.j ORDER BY ea.chain_type, ea.network_id) FILTER (WHERE ea.network_id = r.network_id))[1] AS primary_anchor,
          (array_agg(ea.j ORDER BY ea.chain_type, ea.network_id) FILTER (WHERE ea.network_id <> r.network_id))[1] AS dual
        FROM (
          SELECT a.chain_type, a.network_id, anchord_event_anchor(a, b) AS j
          FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
          WHERE a.record_id = r.id AND b.state IN ('MINED', 'CONFIRMED') AND b.tx_hash IS NOT NULL
        ) ea
      ) p ON true
    $$`)
  // Every derived event, one row per record (for operators' SQL; one function call per batch event).
  yield* sql`
    CREATE VIEW anchor_confirmed_events AS
    SELECT v.id, v.event_id, v.account_id, v.record_id, v.kind, v.payload, v.created_at
    FROM batch_events be
    CROSS JOIN LATERAL anchord_anchor_confirmed(array_fill(be.id, ARRAY[cardinality(be.record_ids)]), be.record_ids) v`
  yield* sql`
    CREATE VIEW all_events AS
      SELECT id, event_id, account_id, record_id, kind, payload, created_at FROM events
      UNION ALL
      SELECT id, event_id, account_id, record_id, kind, payload, created_at FROM anchor_confirmed_events`

  // Deliveries of a derived event reference its batch event (and their record_id); the others their event row.
  yield* sql`
    ALTER TABLE webhook_deliveries
      ALTER COLUMN event_seq DROP NOT NULL,
      ADD COLUMN batch_event_id bigint REFERENCES batch_events (id),
      ADD CONSTRAINT webhook_deliveries_event CHECK ((event_seq IS NULL) <> (batch_event_id IS NULL))`

  // 0007's function: a delivery for each event that has a receiver, whatever its kind.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      created integer;
    BEGIN
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

  // Pending fan-outs of stored events become plain deliveries: the events are written again, same ids,
  // and the trigger above makes their deliveries (claimed and rendered like any other kind). None of them
  // has a delivery yet: a fan-out step removes the events it delivers from its row.
  yield* sql`CREATE TEMPORARY TABLE pending_events AS
    SELECT * FROM events WHERE id IN (SELECT unnest(event_seqs) FROM webhook_fanouts)`
  yield* sql`DELETE FROM events WHERE id IN (SELECT id FROM pending_events)`
  yield* sql`INSERT INTO events SELECT * FROM pending_events ORDER BY id`
  yield* sql`DROP TABLE pending_events`
  yield* sql`DELETE FROM webhook_fanouts`
  yield* sql`
    ALTER TABLE webhook_fanouts
      DROP COLUMN event_seqs,
      ADD COLUMN batch_event_id bigint NOT NULL REFERENCES batch_events (id),
      -- the batch event's records still to fan out (consumed from the front), and each one's receiver
      ADD COLUMN record_ids text[] NOT NULL`

  // The fan-out rows of new batch events: 0011's rule (the record's webhookUrl, else the global webhook
  // subscribed to anchor.confirmed), rows of at most 128 records.
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_batch_event_fanouts() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      fanned integer;
    BEGIN
      INSERT INTO webhook_fanouts (batch_event_id, record_ids, hosts)
      SELECT t.be, array_agg(t.record_id ORDER BY t.ord), array_agg(t.host ORDER BY t.ord) FROM (
        SELECT e.id AS be, x.record_id, x.ord, (row_number() OVER (PARTITION BY e.id ORDER BY x.ord) - 1) / 128 AS part,
               COALESCE(lower(substring(COALESCE(NULLIF(r.webhook_url, ''), s.url)
                 FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), '') AS host
        FROM new_batch_events e
        CROSS JOIN LATERAL unnest(e.record_ids) WITH ORDINALITY AS x(record_id, ord)
        JOIN records r ON r.id = x.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id
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
  yield* sql`
    CREATE TRIGGER batch_events_webhook_fanouts AFTER INSERT ON batch_events
    REFERENCING NEW TABLE AS new_batch_events
    FOR EACH STATEMENT EXECUTE FUNCTION anchord_batch_event_fanouts()`
})
