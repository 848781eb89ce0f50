/**
 * The dispatcher's side of `webhook_deliveries`: claiming due deliveries under a lease, fanning out a
 * confirmation's `anchor.confirmed` events (derived from its batch event, migration 0012) into deliveries
 * rendered and claimed at once (migration 0011),
 * reading what a first render needs and storing the rendered bodies, recording outcomes (failed attempts
 * logged, a success kept on its row; next state on the ladder), and when the next one is due.
 *
 * These statements run per claim batch on every node, so they stay as they were measured (docs/webhooks.md,
 * "Performance"): batches, `FOR UPDATE SKIP LOCKED`, primary-key lookups, claims and outcomes committed
 * asynchronously, and untraced (`Effect.fnUntraced`). Every statement goes through `SqlSchema` with the row
 * schemas below, but one, measured hot: see `findRenderInputs`.
 *
 * Why a table of our own rather than `PersistedQueue`: deliveries are created by triggers, directly on
 * the `events` outbox or through the fan-out rows of `batch_events` (same transaction as any producer's
 * state change, producers need no code), and
 * the delivery log the API serves (./DeliveryLog.ts) is the same row that carries the retry state.
 *
 * Leases, the retry ladder and the rotation overlap read time through Effect's Clock (passed to the
 * statements), not PostgreSQL's now(): one clock for the node and its tests (TestClock). Nodes sharing
 * a database must keep their clocks in sync (NTP): a skew shifts leases by as much.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema, type Statement } from "effect/sql"
import * as Crypto from "node:crypto"
import { anchorConfirmedPayloads } from "../anchoring/anchorViews.ts"
import { render, type RenderInput, StableHeaders } from "./payload.ts"
import { inOverlap } from "./rotation.ts"
import { DeliveryEventKind, DeliveryMode, DeliveryState, DeliveryTarget, dieOnSchemaError, Environment, PayloadFormat } from "./rows.ts"

/** LISTEN/NOTIFY channel of the dispatchers (the deliveries trigger of migrations 0003/0007 notifies it too). */
export const WEBHOOK_CHANNEL = "anchord_webhooks"

/** A claimed delivery, ready to send once rendered (`seq` is the table's key as text). */
export const Claimed = Schema.Struct({
  seq: Schema.String,
  id: Schema.String,
  accountId: Schema.String,
  /** Its event's record (none for a webhook.test event). */
  recordId: Schema.NullOr(Schema.String),
  url: Schema.String,
  /** The receiver (host[:port], lowercase): the unit of the per-host cap. */
  host: Schema.String,
  environment: Environment,
  attempts: Schema.Number,
  round: Schema.Number,
  body: Schema.NullOr(Schema.String),
  signature: Schema.NullOr(Schema.String),
  signatureNext: Schema.NullOr(Schema.String),
  headers: Schema.NullOr(StableHeaders),
  /**
   * The secrets of the delivery's environment as of this claim, for the Standard Webhooks signature (made per attempt, over
   * the attempt's timestamp): the newest, and the previous one during a rotation overlap.
   */
  secret: Schema.String,
  secretPrevious: Schema.NullOr(Schema.String),
  /** How the delivery's environment sends (./batch.ts): one by one, or batched with its receiver's other events. */
  deliveryMode: DeliveryMode,
  batchMaxEvents: Schema.Number,
  batchMaxWaitMs: Schema.Number
})
export type Claimed = typeof Claimed.Type

/** A delivery's first rendering, as stored on its row. */
export const Rendering = Schema.Struct({
  seq: Schema.String,
  body: Schema.String,
  signature: Schema.String,
  signatureNext: Schema.NullOr(Schema.String),
  headers: StableHeaders
})
export type Rendering = typeof Rendering.Type

/** The outcome of a claimed attempt. */
export interface Completion {
  readonly seq: string
  readonly token: string
  readonly round: number
  readonly attempt: number
  readonly startedAt: Date
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
  readonly ok: boolean
  /** Delay before the next attempt when this one failed and another remains. */
  readonly retryInMillis: number | null
}

/** A record of a leased chunk, rendered and signed, with what its delivery row will hold. */
export interface ChunkItem extends Omit<Claimed, "seq" | "body" | "signature" | "headers"> {
  readonly batchEventId: string
  readonly eventId: string
  readonly accountId: string
  readonly recordId: string
  readonly target: "record" | "account"
  readonly body: string
  readonly signature: string
  readonly headers: StableHeaders
}

/**
 * A leased `webhook_fanouts` row (migration 0017): records of one batch event this node sends, then writes the
 * outcomes of at once (completeChunk). Its lease expiring (a crash) gives it to the next fan-out step, whole.
 */
export interface Chunk {
  readonly fanoutId: string
  readonly token: string
  readonly items: ReadonlyArray<ChunkItem>
}

/** A chunk record's first attempt: an outcome as a claimed delivery's, by record. */
export interface ChunkOutcome extends Omit<Completion, "seq" | "token" | "round" | "attempt"> {
  readonly recordId: string
}

/** What one fan-out step did: the chunks it leased to this node, and whether more may be waiting. */
export interface FanOut {
  readonly chunks: ReadonlyArray<Chunk>
  /** Some events were taken (more may wait); false when there were none, or all wait for their receivers. */
  readonly found: boolean
}

/** A claimed delivery's state after an outcome. */
const CompletionResult = Schema.Struct({ seq: Schema.String, state: DeliveryState, nextAttemptAt: Schema.NullOr(Schema.Date) })
export type CompletionResult = typeof CompletionResult.Type

/** A chunk record's delivery as completeChunk wrote it: a delivery row of its own, or an entry of a chunk row. */
const ChunkDelivery = Schema.Struct({
  recordId: Schema.String,
  id: Schema.String,
  state: DeliveryState,
  nextAttemptAt: Schema.NullOr(Schema.Date)
})

/** `text[]` columns read as JSON text (`array_to_json(…)::text`) and parsed once, here. */
const TextArrayJson = Schema.fromJsonString(Schema.Array(Schema.String))

/** A `webhook_fanouts` row one fan-out step looks at (migrations 0011, 0017). */
const FanoutRow = Schema.Struct({ id: Schema.String, batchEventId: Schema.String, recordIds: TextArrayJson, hosts: TextArrayJson })

const IdRow = Schema.Struct({ id: Schema.String })
const WaitRow = Schema.Struct({ wait: Schema.NullOr(Schema.Number) })

/**
 * jsonb read as text and parsed here: the client's name transform would otherwise rewrite the keys of
 * the client's own metadata (my_key → myKey). PostgreSQL's own output, so plain JSON.parse.
 */
const parseJson = (text: string | null): Record<string, unknown> | null => text === null ? null : JSON.parse(text)

/** The seq a chunk entry's delivery id carries (`chunkEntryId` in completeChunk), undefined for an id of another form. */
export const chunkEntrySeq = (id: string): string | undefined => {
  if (!/^dlv_[0-7][0-9a-f]{31}$/.test(id)) return undefined
  return BigInt(`0x${id.slice(4, 20)}`).toString()
}

/** Fan-out rows (of at most 128 events each, migration 0011) one step looks at. */
const FANOUT_ROWS = 8

/**
 * The receiver's authority (host[:port], lowercase) of a URL: the triggers' own function (migration 0024,
 * `anchord_url_host`), for the deliveries the node inserts itself.
 */
export const hostOf = (sql: SqlClient.SqlClient, url: Statement.Fragment): Statement.Fragment => sql`anchord_url_host(${url})`

/** What a delivery's first render reads: the stored event, the record, the settings of the delivery's environment. */
const RenderRow = Schema.Struct({
  seq: Schema.String,
  eventId: Schema.String,
  kind: DeliveryEventKind,
  /** A stored event's payload; null for a derived anchor.confirmed (built from `derived`). */
  payloadText: Schema.NullOr(Schema.String),
  eventCreatedAt: Schema.Date,
  format: PayloadFormat,
  secret: Schema.String,
  previous: Schema.NullOr(Schema.String),
  overlap: Schema.Boolean,
  hash: Schema.NullOr(Schema.String),
  packageMode: Schema.NullOr(Schema.String),
  chainType: Schema.NullOr(Schema.String),
  networkId: Schema.NullOr(Schema.String),
  metadataText: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.String),
  collection: Schema.NullOr(Schema.String),
  anchorPayloadText: Schema.NullOr(Schema.String)
})
type RenderRow = typeof RenderRow.Type

/**
 * A first render's row of a stored or derived event (renderInputs): with, for a derived one, its batch event and
 * anchoredAt, and for a record.updated/deleted the record's last confirmation before it (stored, derived or both).
 */
const RenderInputRow = Schema.Struct({
  ...RenderRow.fields,
  recordId: Schema.NullOr(Schema.String),
  batchEventId: Schema.NullOr(Schema.String),
  anchoredAt: Schema.NullOr(Schema.Date),
  priorId: Schema.NullOr(Schema.String),
  priorBatchEventId: Schema.NullOr(Schema.String),
  priorAnchoredAt: Schema.NullOr(Schema.Date)
})

/**
 * The render's input from its row: the secrets by the rotation overlap, the jsonb parsed; a derived
 * anchor.confirmed's payload (and a derived prior one) built by the caller from the record's anchors.
 */
const toRenderInput = (
  row: RenderRow,
  derived?: { readonly payload?: Record<string, unknown> | undefined; readonly prior?: Record<string, unknown> | undefined }
): RenderInput & { readonly seq: string } => {
  const useNext = row.overlap && row.previous !== null
  return {
    seq: row.seq,
    eventId: row.eventId,
    kind: row.kind,
    payload: derived?.payload ?? parseJson(row.payloadText) ?? {},
    eventCreatedAt: row.eventCreatedAt,
    format: row.format,
    signingSecret: useNext ? row.previous! : row.secret,
    nextSecret: useNext ? row.secret : null,
    record: {
      hash: row.hash,
      packageMode: row.packageMode,
      chainType: row.chainType,
      networkId: row.networkId,
      metadata: parseJson(row.metadataText),
      status: row.status,
      collection: row.collection
    },
    anchorPayload: derived?.prior ?? parseJson(row.anchorPayloadText)
  }
}

/** An event to fan out (`seq` is its key, "<batch event id>:<record id>"): its render's row, and its one target. */
const FanRow = Schema.Struct({
  ...RenderRow.fields,
  batchEventId: Schema.String,
  /** The completing batch's anchoredAt: the record's anchoredAt in its event. */
  anchoredAt: Schema.Date,
  accountId: Schema.String,
  recordId: Schema.String,
  environment: Environment,
  target: DeliveryTarget,
  url: Schema.String,
  host: Schema.String,
  deliveryMode: DeliveryMode,
  batchMaxEvents: Schema.Number,
  batchMaxWaitMs: Schema.Number
})
type FanRow = typeof FanRow.Type

export class DeliveryClaims extends Context.Service<DeliveryClaims, {
  /**
   * Claims up to `limit` due deliveries, skipping receivers (host:port) that already have `perHost`
   * attempts in flight across all nodes (a soft cap: one claim may add up to `limit` more).
   */
  readonly claim: (limit: number, leaseMillis: number, nodeId: string, token: string,
    perHost: number) => Effect.Effect<ReadonlyArray<Claimed>, SqlError.SqlError>
  /**
   * Fans out up to `limit` events of the oldest unleased `webhook_fanouts` rows (migrations 0011, 0017): the
   * records taken are rendered, signed, and leased to this node as chunks (one per row), in one transaction;
   * no delivery row is written before their outcomes (completeChunk).
   * A receiver's events wait in the row while this node has `perHost` attempts in flight to it
   * (`inFlight`, this node's own count: the fan-out reads no other node's claims).
   */
  readonly fanOut: (
    limit: number,
    leaseMillis: number,
    nodeId: string,
    token: string,
    perHost: number,
    inFlight: ReadonlyMap<string, number>
  ) => Effect.Effect<FanOut, SqlError.SqlError>
  /** What the first render of these deliveries needs: the stored event, the record, the signing secrets now. */
  readonly renderInputs: (seqs: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<RenderInput & { readonly seq: string }>, SqlError.SqlError>
  /** Stores bodies rendered for the first time; returns what is stored (a concurrent render may have won). */
  readonly saveRendered: (items: ReadonlyArray<Rendering>) => Effect.Effect<ReadonlyArray<Rendering>, SqlError.SqlError>
  /** Records outcomes of claimed attempts (ignored when the claim was lost); the deliveries' next state. */
  readonly complete: (items: ReadonlyArray<Completion>, nodeId: string) => Effect.Effect<ReadonlyArray<CompletionResult>, SqlError.SqlError>
  /**
   * A chunk's outcomes, once, for the records still in the leased row: the first-attempt successes in one
   * `webhook_chunk_deliveries` row per receiver (migration 0023), each failure in a delivery row of its own, PENDING
   * on the ladder (or FAILED) with its attempt logged; the leased row goes. Nothing when the lease was lost
   * (another node sends the chunk again). The deliveries written, by record.
   */
  readonly completeChunk: (chunk: Chunk, outcomes: ReadonlyArray<ChunkOutcome>,
    nodeId: string
  ) => Effect.Effect<ReadonlyArray<{ readonly recordId: string; readonly id: string; readonly state: DeliveryState; readonly nextAttemptAt: Date | null }>,
    SqlError.SqlError>
  /** Milliseconds until the earliest pending delivery is due (0 if one is due now), null if none. */
  readonly nextDueMillis: Effect.Effect<number | null, SqlError.SqlError>
}>()("anchord/webhooks/DeliveryClaims") {
  static readonly layer = Layer.effect(
    DeliveryClaims,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /**
       * Claims and outcomes commit without waiting for the WAL flush: a claim lost in a crash only
       * delays an attempt until its lease would have expired anyway, and a lost outcome only means
       * the delivery is sent again (at-least-once). Bodies and signatures (saveRendered) stay durable.
       */
      const asyncCommit = sql`SELECT set_config('synchronous_commit', 'off', true)`

      const clockNow = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      /** Seqs as one `bigint[]` parameter (its text form): one statement text whatever their number. */
      const seqArray = (seqs: ReadonlyArray<string>) => sql`${`{${seqs.join(",")}}`}::bigint[]`

      /** A fan-out's target (events `e`, records `r`, webhook_settings `s`): the record's webhookUrl, else the global webhook. */
      const targetUrl = sql`COALESCE(NULLIF(r.webhook_url, ''), s.url)`

      /**
       * A chunk entry's delivery id (migration 0023): `dlv_` + its seq in 16 hex digits + the last 16 of the id drawn at
       * fan-out (random). The same form as every delivery id (`dlv_` + 32 hex); the seq in it finds the entry through the
       * chunk rows' seq ranges (DeliveryLog), so no index over every entry's id is written. The seq was visible already
       * (the list's cursor is the seq in base64url).
       */
      const chunkEntryId = sql`'dlv_' || lpad(to_hex(v.seq), 16, '0') || right(v.id, 16)`

      /** A fan-out row's arrays from JSON text (a jsonb parameter), as the columns take them. */
      const textArray = (values: ReadonlyArray<string>) => sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`

      const claimDue = SqlSchema.findAll({
        Request: Schema.Struct({
          limit: Schema.Number,
          nodeId: Schema.String,
          token: Schema.String,
          perHost: Schema.Number,
          now: Schema.Date,
          until: Schema.Date
        }),
        Result: Claimed,
        execute: ({ limit, nodeId, now, perHost, token, until }) =>
          sql`
            WITH async_commit AS (${asyncCommit}), busy AS (
              -- receivers already at their in-flight cap (claims of every node count)
              SELECT host FROM webhook_deliveries
              WHERE locked_until IS NOT NULL AND locked_until > ${now} AND state = 'PENDING'
              GROUP BY host HAVING count(*) >= ${perHost}
            ), due AS (
              SELECT seq FROM webhook_deliveries
              WHERE state = 'PENDING' AND next_attempt_at <= ${now} AND host NOT IN (SELECT host FROM busy)
              ORDER BY next_attempt_at
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            )
            UPDATE webhook_deliveries d SET
              next_attempt_at = ${until}, locked_until = ${until},
              locked_by = ${nodeId}, claim_token = ${token}, updated_at = ${now}
            FROM async_commit, webhook_settings s
            -- ARRAY(...): primary-key lookups, never a join that scans the whole (ever-growing) table;
            -- the secrets of the delivery's environment (migration 0013)
            WHERE d.seq = ANY (ARRAY(SELECT seq FROM due)) AND s.account_id = d.account_id AND s.environment = d.environment
            RETURNING d.seq::text AS seq, d.id, d.account_id, d.record_id, d.url, d.host, d.environment, d.attempts, d.round, d.body, d.signature,
              d.signature_next, d.headers, s.secret, s.delivery_mode, s.batch_max_events, s.batch_max_wait_ms,
              -- the rotation overlap rule of rotation.ts, on the Clock's time
              CASE WHEN ${inOverlap(sql, now, "s")} THEN s.previous_secret END AS secret_previous`
      })

      // Several rows: the records of receivers at their cap stay in their rows (in order) while those
      // of the others, in rows behind them, go on. Leased rows are skipped until their lease expires.
      const leasableFanouts = SqlSchema.findAll({
        Request: Schema.Date,
        Result: FanoutRow,
        execute: (now) =>
          sql`
            SELECT id::text AS id, batch_event_id::text AS batch_event_id, array_to_json(record_ids)::text AS record_ids,
              array_to_json(hosts)::text AS hosts
            FROM webhook_fanouts WHERE locked_until IS NULL OR locked_until <= ${now}
            ORDER BY webhook_fanouts.id LIMIT ${FANOUT_ROWS} FOR UPDATE SKIP LOCKED`
      })

      const fanEvents = SqlSchema.findAll({
        Request: Schema.Struct({ batchEventIds: Schema.Array(Schema.String), recordIds: Schema.Array(Schema.String), now: Schema.Date }),
        Result: FanRow,
        execute: ({ batchEventIds, now, recordIds }) =>
          sql`
            SELECT c.batch_event_id::text || ':' || c.record_id AS seq, be.id::text AS batch_event_id,
              anchord_event_id(be.id, r.id) AS event_id, 'anchor.confirmed' AS kind, NULL AS payload_text,
              be.created_at AS event_created_at, cb.anchored_at,
              be.account_id, r.id AS record_id, r.environment,
              CASE WHEN NULLIF(r.webhook_url, '') IS NOT NULL THEN 'record' ELSE 'account' END AS target,
              ${targetUrl} AS url, ${hostOf(sql, targetUrl)} AS host,
              s.payload_format AS format, s.secret, s.previous_secret AS previous, (${inOverlap(sql, now, "s")}) AS overlap,
              s.delivery_mode, s.batch_max_events, s.batch_max_wait_ms,
              -- the state of a record its anchor.confirmed announces (migration 0016: read, not stored)
              r.hash, r.package_mode, r.chain_type, r.network_id, r.metadata::text AS metadata_text, 'ANCHORED' AS status, r.collection,
              -- anchor.confirmed: no prior anchor to show
              NULL AS anchor_payload_text
            FROM unnest(string_to_array(${batchEventIds.join(",")}, ',')::bigint[], string_to_array(${recordIds.join(",")}, ','))
              WITH ORDINALITY AS c(batch_event_id, record_id, ord)
            JOIN batch_events be ON be.id = c.batch_event_id
            JOIN anchor_batches cb ON cb.id = be.batch_id
            JOIN records r ON r.id = c.record_id
            JOIN webhook_settings s ON s.account_id = be.account_id AND s.environment = r.environment
            -- (a URL cleared since the event leaves nothing to deliver to)
            WHERE NULLIF(${targetUrl}, '') IS NOT NULL
            ORDER BY c.ord`
      })

      /** Events the fan-out could not render: inserted unclaimed and bodiless, due now (the claim's render records the failure). */
      const insertUnrendered = SqlSchema.void({
        Request: Schema.Struct({
          deliveries: Schema.Array(Schema.Struct({
            id: Schema.String,
            batchEventId: Schema.String,
            eventId: Schema.String,
            accountId: Schema.String,
            recordId: Schema.String,
            environment: Environment,
            target: DeliveryTarget,
            url: Schema.String,
            host: Schema.String
          })),
          now: Schema.Date
        }),
        execute: ({ deliveries, now }) =>
          sql`
            INSERT INTO webhook_deliveries (id, batch_event_id, event_id, account_id, record_id, environment, target, url, host,
              next_attempt_at, updated_at)
            SELECT v.id, v.batch_event_id, v.event_id, v.account_id, v.record_id, v.environment, v.target, v.url, v.host, ${now}, ${now}
            FROM jsonb_to_recordset(${
            JSON.stringify(deliveries.map((d, ord) => ({
              ord,
              id: d.id,
              batch_event_id: d.batchEventId,
              event_id: d.eventId,
              account_id: d.accountId,
              record_id: d.recordId,
              environment: d.environment,
              target: d.target,
              url: d.url,
              host: d.host
            })))
          }::jsonb) AS v(ord int, id text, batch_event_id bigint, event_id text, account_id text, record_id text,
              environment text, target text, url text, host text)
            ORDER BY v.ord`
      })

      const deleteFanout = SqlSchema.void({
        Request: Schema.String,
        execute: (id) => sql`DELETE FROM webhook_fanouts WHERE id = ${id}::bigint`
      })

      const FanoutRecords = { id: Schema.String, recordIds: Schema.Array(Schema.String), hosts: Schema.Array(Schema.String) }
      const Lease = { until: Schema.Date, nodeId: Schema.String, token: Schema.String }

      /** A fan-out row whose records are all taken: leased whole, as the chunk. */
      const leaseFanout = SqlSchema.void({
        Request: Schema.Struct({ ...FanoutRecords, ...Lease }),
        execute: ({ hosts, id, nodeId, recordIds, token, until }) =>
          sql`
            UPDATE webhook_fanouts SET record_ids = ${textArray(recordIds)}, hosts = ${textArray(hosts)},
              locked_until = ${until}, locked_by = ${nodeId}, claim_token = ${token}
            WHERE id = ${id}::bigint`
      })

      /** A fan-out row keeps the records that wait (their receivers at their cap). */
      const keepInFanout = SqlSchema.void({
        Request: Schema.Struct(FanoutRecords),
        execute: ({ hosts, id, recordIds }) =>
          sql`UPDATE webhook_fanouts SET record_ids = ${textArray(recordIds)}, hosts = ${textArray(hosts)} WHERE id = ${id}::bigint`
      })

      /** The records taken from a row of which others wait: a row of their own, leased, the chunk. */
      const splitFanout = SqlSchema.findOne({
        Request: Schema.Struct({ batchEventId: Schema.String, recordIds: FanoutRecords.recordIds, hosts: FanoutRecords.hosts, ...Lease }),
        Result: IdRow,
        execute: ({ batchEventId, hosts, nodeId, recordIds, token, until }) =>
          sql`
            INSERT INTO webhook_fanouts (batch_event_id, record_ids, hosts, locked_until, locked_by, claim_token)
            VALUES (${batchEventId}::bigint, ${textArray(recordIds)}, ${textArray(hosts)}, ${until}, ${nodeId}, ${token})
            RETURNING id::text AS id`
      })

      /** The records still leased to us (a hard delete takes its record out of the row; a lost lease, all). */
      const heldRecords = SqlSchema.findOneOption({
        Request: Schema.Struct({ fanoutId: Schema.String, token: Schema.String }),
        Result: Schema.Struct({ recordIds: TextArrayJson }),
        execute: ({ fanoutId, token }) =>
          sql`
            SELECT array_to_json(record_ids)::text AS record_ids FROM webhook_fanouts
            WHERE id = ${fanoutId}::bigint AND claim_token = ${token} FOR UPDATE`
      })

      /** A chunk's outcomes, as completeChunk's entries (`values`, see there) in one jsonb parameter. */
      const writeChunkOutcomes = SqlSchema.findAll({
        Request: Schema.Struct({ values: Schema.String, nodeId: Schema.String, now: Schema.Date }),
        Result: ChunkDelivery,
        execute: ({ nodeId, now, values }) =>
          sql`
            WITH v AS (
              -- each record's seq from the deliveries' sequence, in the chunk's order: its place in the log's order
              -- whether it lands in a chunk row or a delivery row (the recordset keeps the array's order)
              SELECT v.*, nextval('webhook_deliveries_seq_seq') AS seq
              FROM jsonb_to_recordset(${values}::jsonb) AS v(ord int, id text, batch_event_id bigint,
                event_id text, account_id text, record_id text, environment text, target text, url text, host text, body text,
                signature text, signature_next text, headers jsonb, ok boolean, started_at timestamptz, status_code int,
                latency_ms int, error text, retry_ms bigint)
            ), inserted AS (
              -- a failed first attempt: its own delivery row, on the ladder, as DeliveryClaims.complete would have left it
              INSERT INTO webhook_deliveries (seq, id, batch_event_id, event_id, account_id, record_id, environment, target, url, host,
                state, attempts, next_attempt_at, body, signature, signature_next, headers, last_status_code, last_error, updated_at)
              SELECT v.seq, v.id, v.batch_event_id, v.event_id, v.account_id, v.record_id, v.environment, v.target, v.url, v.host,
                CASE WHEN v.retry_ms IS NULL THEN 'FAILED' ELSE 'PENDING' END, 1,
                CASE WHEN v.retry_ms IS NULL THEN NULL ELSE ${now}::timestamptz + v.retry_ms * interval '1 millisecond' END,
                v.body, v.signature, v.signature_next, v.headers, v.status_code, v.error, ${now}
              FROM v WHERE NOT v.ok ORDER BY v.ord
              RETURNING seq, id, record_id, state, next_attempt_at
            ), logged AS (
              INSERT INTO webhook_attempts (delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id)
              SELECT i.seq, 0, 0, v.started_at, v.status_code, v.latency_ms, v.error, v.retry_ms, ${nodeId}
              FROM inserted i JOIN v ON v.seq = i.seq
            ), chunked AS (
              -- the successes: one row per receiver of the chunk (migration 0023), the outcomes as arrays
              INSERT INTO webhook_chunk_deliveries (batch_event_id, account_id, environment, target, url, host, node_id, delivered_at,
                record_ids, ids, event_ids, seqs, status_codes, latencies_ms, started_at, min_seq, max_seq)
              SELECT v.batch_event_id, v.account_id, v.environment, v.target, v.url, v.host, ${nodeId}, ${now},
                array_agg(v.record_id ORDER BY v.ord), array_agg(${chunkEntryId} ORDER BY v.ord), array_agg(v.event_id ORDER BY v.ord),
                array_agg(v.seq ORDER BY v.ord), array_agg(v.status_code ORDER BY v.ord), array_agg(v.latency_ms ORDER BY v.ord),
                array_agg(v.started_at ORDER BY v.ord), min(v.seq), max(v.seq)
              FROM v WHERE v.ok
              GROUP BY v.batch_event_id, v.account_id, v.environment, v.target, v.url, v.host
            )
            SELECT record_id, id, state, next_attempt_at FROM inserted
            UNION ALL
            SELECT record_id, ${chunkEntryId}, 'SUCCEEDED', NULL::timestamptz FROM v WHERE v.ok`
      })

      /**
       * The one statement of this store whose rows are read as typed (`RenderInputRow`), not decoded: it runs for
       * every delivery's first render, and its row is the widest (23 columns, 17 of them nullable): decoding it cost
       * 8–12 µs a row (2 loaded cores), as much as the claim, stored-rendering and outcome rows together (3.5–10 µs),
       * against ~300 µs of node CPU per delivery in bench:webhooks. Its columns are the schema's, written beside it.
       */
      const findRenderInputs = ({ now, seqs }: { readonly seqs: ReadonlyArray<string>; readonly now: Date }) =>
        sql<typeof RenderInputRow.Type>`
            WITH d AS (
              SELECT d.seq, d.account_id, d.environment, d.event_seq, d.batch_event_id, d.record_id FROM webhook_deliveries d
              WHERE d.seq = ANY(string_to_array(${seqs.join(",")}, ',')::bigint[])
            ), e AS (
              -- the delivery's event: a stored one, or one derived from its batch event (migration 0012)
              SELECT d.seq, d.account_id, d.environment, e.id, e.event_id, e.kind, e.payload::text AS payload_text, e.created_at, e.record_id,
                NULL::bigint AS batch_event_id, NULL::timestamptz AS anchored_at
              FROM d JOIN events e ON e.id = d.event_seq
              UNION ALL
              SELECT d.seq, d.account_id, d.environment, be.id, anchord_event_id(be.id, d.record_id), 'anchor.confirmed', NULL, be.created_at,
                d.record_id, be.id, cb.anchored_at
              FROM d JOIN batch_events be ON be.id = d.batch_event_id JOIN anchor_batches cb ON cb.id = be.batch_id
            )
            SELECT e.seq::text AS seq, e.event_id, e.kind, e.payload_text, e.created_at AS event_created_at,
              e.record_id, e.batch_event_id::text AS batch_event_id, e.anchored_at,
              s.payload_format AS format, s.secret, s.previous_secret AS previous,
              (${inOverlap(sql, now, "s")}) AS overlap,
              r.hash, r.package_mode, r.chain_type, r.network_id, r.metadata::text AS metadata_text, st.status, r.collection,
              prior.payload::text AS anchor_payload_text, prior.id::text AS prior_id,
              prior_be.id::text AS prior_batch_event_id, prior_be.anchored_at AS prior_anchored_at
            FROM e
            -- the delivery's environment's format and secrets (migration 0013)
            JOIN webhook_settings s ON s.account_id = e.account_id AND s.environment = e.environment
            LEFT JOIN records r ON r.id = e.record_id
            -- its state (src/anchoring/recordState.ts, migration 0016)
            LEFT JOIN LATERAL anchord_record_state(r.id, r.status, r.chain_type) st ON true
            -- The record's last anchor.confirmed before the event: a stored one (written before migration 0012)
            -- by the events index, a derived one through the record's anchors' batches. The kind test inside:
            -- a gate checked before the lookups, which then run only for the rare updated/deleted events.
            LEFT JOIN LATERAL (
              SELECT p.id, p.payload FROM events p
              WHERE e.kind IN ('record.updated', 'record.deleted')
                AND p.record_id = e.record_id AND p.kind = 'anchor.confirmed' AND p.id < e.id
              ORDER BY p.id DESC LIMIT 1
            ) prior ON true
            LEFT JOIN LATERAL (
              SELECT be.id, cb.anchored_at FROM anchors a
              JOIN batch_events be ON be.batch_id = a.batch_id JOIN anchor_batches cb ON cb.id = be.batch_id
              WHERE e.kind IN ('record.updated', 'record.deleted') AND a.record_id = e.record_id
                AND e.record_id = ANY (be.record_ids) AND be.id < e.id
              ORDER BY be.id DESC LIMIT 1
            ) prior_be ON true`

      // A batch goes as one jsonb parameter (`values`, built by the method from its typed items) and its seqs as
      // one bigint[] (`seqs`): one statement text whatever the batch's size, and no per-item encoding pass.
      const storeRendered = SqlSchema.findAll({
        Request: Schema.Struct({ values: Schema.String, seqs: Schema.Array(Schema.String) }),
        Result: Rendering,
        execute: ({ seqs, values }) =>
          sql`
            UPDATE webhook_deliveries d SET
              body = COALESCE(d.body, v.body),
              signature = CASE WHEN d.body IS NULL THEN v.signature ELSE d.signature END,
              signature_next = CASE WHEN d.body IS NULL THEN v.signature_next ELSE d.signature_next END,
              headers = COALESCE(d.headers, v.headers)
            FROM jsonb_to_recordset(${values}::jsonb) AS v(seq bigint, body text, signature text, signature_next text, headers jsonb)
            WHERE d.seq = v.seq AND d.seq = ANY (${seqArray(seqs)})
              -- a delivery cancelled by a hard delete while it was being rendered keeps no body (and is not sent)
              AND NOT (d.erased AND d.state <> 'PENDING')
            RETURNING d.seq::text AS seq, d.body, d.signature, d.signature_next, d.headers`
      })

      const recordOutcomes = SqlSchema.findAll({
        Request: Schema.Struct({ values: Schema.String, seqs: Schema.Array(Schema.String), nodeId: Schema.String, now: Schema.Date }),
        Result: CompletionResult,
        execute: ({ nodeId, now, seqs, values }) =>
          sql`
            WITH async_commit AS (${asyncCommit}), v AS (
              SELECT v.* FROM async_commit, jsonb_to_recordset(${values}::jsonb) AS v(seq bigint, token text, round int, attempt int, started_at timestamptz, status_code int,
                latency_ms int, error text, ok boolean, retry_ms bigint)
            ), moved AS (
              UPDATE webhook_deliveries d SET
                attempts = v.attempt + 1,
                state = CASE WHEN v.ok THEN 'SUCCEEDED' WHEN v.retry_ms IS NULL THEN 'FAILED' ELSE 'PENDING' END,
                next_attempt_at = CASE WHEN v.ok OR v.retry_ms IS NULL THEN NULL
                  ELSE ${now}::timestamptz + v.retry_ms * interval '1 millisecond' END,
                last_status_code = v.status_code, last_error = v.error,
                locked_until = NULL, locked_by = NULL, claim_token = NULL,
                delivered_at = CASE WHEN v.ok THEN ${now}::timestamptz ELSE d.delivered_at END,
                -- the successful attempt lives here (migration 0011), not in webhook_attempts
                success_started_at = CASE WHEN v.ok THEN v.started_at END,
                success_latency_ms = CASE WHEN v.ok THEN v.latency_ms END,
                success_node_id = CASE WHEN v.ok THEN ${nodeId} END,
                updated_at = ${now}
              FROM v
              -- Primary-key lookups only. Written d.state = 'PENDING' the test matched the predicate of the
              -- partial index webhook_deliveries_due, which the planner then walked whole (every PENDING row: all
              -- nodes' claims in flight, waiting retries, dead entries not yet vacuumed) to filter by seq: a cost
              -- per statement that grew with the backlog, not with the outcomes (docs/benchmarks.md, issue 26).
              -- IS TRUE keeps the test without implying that predicate. (The token alone would do: every
              -- statement moving a row out of PENDING clears it.)
              WHERE d.seq = v.seq AND d.seq = ANY (${seqArray(seqs)})
                AND d.claim_token = v.token AND (d.state = 'PENDING') IS TRUE
              RETURNING d.seq, d.state, d.next_attempt_at
            ), logged AS (
              -- failed attempts, and any attempt whose claim was lost (it happened; the row did not take it)
              INSERT INTO webhook_attempts (delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id)
              SELECT seq, round, attempt, started_at, status_code, latency_ms, error, CASE WHEN ok THEN NULL ELSE retry_ms END, ${nodeId}
              FROM v WHERE NOT v.ok OR v.seq NOT IN (SELECT seq FROM moved)
            )
            SELECT seq::text AS seq, state, next_attempt_at FROM moved`
      })

      const nextDue = SqlSchema.findOne({
        Request: Schema.Date,
        Result: WaitRow,
        execute: (now) =>
          sql`
            -- events waiting to be fanned out are due now; a leased chunk is due when its lease expires (a crashed
            -- node's); LEAST ignores NULL, and without either the answer is null, not 0 ("due now")
            SELECT CASE WHEN EXISTS (SELECT 1 FROM webhook_fanouts WHERE locked_until IS NULL OR locked_until <= ${now}) THEN 0
              WHEN x.m IS NOT NULL THEN GREATEST(0, CEIL(EXTRACT(EPOCH FROM (x.m - ${now}::timestamptz)) * 1000))::int END AS wait
            FROM (SELECT LEAST((SELECT min(next_attempt_at) FROM webhook_deliveries WHERE state = 'PENDING'),
              (SELECT min(locked_until) FROM webhook_fanouts)) AS m) x`
      })

      return DeliveryClaims.of({
        claim: Effect.fnUntraced(function*(limit, leaseMillis, nodeId, token, perHost) {
          const ms = yield* Clock.currentTimeMillis
          return yield* dieOnSchemaError(claimDue({ limit, nodeId, token, perHost, now: new Date(ms), until: new Date(ms + leaseMillis) }))
        }),

        fanOut: Effect.fnUntraced(function*(limit, leaseMillis, nodeId, token, perHost, inFlight) {
          const ms = yield* Clock.currentTimeMillis
          const now = new Date(ms)
          const until = new Date(ms + leaseMillis)
          return yield* sql.withTransaction(Effect.gen(function*() {
            const rows = yield* dieOnSchemaError(leasableFanouts(now))
            if (rows.length === 0) return { chunks: [], found: false }
            const counts = new Map(inFlight)
            // chosen events, each as "<batch event id>:<record id>" (the derived event's key)
            const chosen: Array<{ readonly batchEventId: string; readonly recordId: string }> = []
            const taken: Array<{
              readonly id: string
              readonly batchEventId: string
              readonly all: number
              readonly kept: { readonly recordIds: Array<string>; readonly hosts: Array<string> }
              readonly chosen: Array<{ readonly recordId: string; readonly host: string }>
            }> = []
            for (const row of rows) {
              const t = { id: row.id, batchEventId: row.batchEventId, all: row.recordIds.length,
                kept: { recordIds: new Array<string>(), hosts: new Array<string>() }, chosen: new Array<{ recordId: string; host: string }>() }
              row.recordIds.forEach((recordId, i) => {
                const host = row.hosts[i] ?? ""
                const n = counts.get(host) ?? 0
                if (chosen.length >= limit || n >= perHost) {
                  t.kept.recordIds.push(recordId)
                  t.kept.hosts.push(host)
                  return
                }
                counts.set(host, n + 1)
                chosen.push({ batchEventId: row.batchEventId, recordId })
                t.chosen.push({ recordId, host })
              })
              taken.push(t)
              if (chosen.length >= limit) break
            }
            const events = chosen.length === 0 ? [] : yield* dieOnSchemaError(fanEvents({
              batchEventIds: chosen.map((c) => c.batchEventId),
              recordIds: chosen.map((c) => c.recordId),
              now
            }))
            const payloads = yield* anchorConfirmedPayloads(sql, events.map((e) => ({ key: e.seq, ...e })))
            const items = new Map<string, ChunkItem>()
            const unrendered: Array<FanRow> = []
            for (const e of events) {
              const input = toRenderInput(e, { payload: payloads.get(e.seq) })
              let rendered: ReturnType<typeof render>
              try {
                rendered = render(input)
              } catch {
                // Not rendered here: inserted unclaimed and bodiless; the claim's render records the failure.
                unrendered.push(e)
                continue
              }
              items.set(e.seq, {
                id: `dlv_${Crypto.randomUUID().replaceAll("-", "")}`,
                batchEventId: e.batchEventId,
                eventId: e.eventId,
                accountId: e.accountId,
                recordId: e.recordId,
                environment: e.environment,
                target: e.target,
                url: e.url,
                host: e.host,
                attempts: 0,
                round: 0,
                body: rendered.body,
                signature: rendered.signature,
                signatureNext: rendered.signatureNext,
                headers: rendered.headers,
                secret: e.secret,
                secretPrevious: input.nextSecret === null ? null : e.previous,
                deliveryMode: e.deliveryMode,
                batchMaxEvents: e.batchMaxEvents,
                batchMaxWaitMs: e.batchMaxWaitMs
              })
            }
            if (unrendered.length > 0) {
              yield* dieOnSchemaError(insertUnrendered({
                deliveries: unrendered.map((e) => ({ ...e, id: `dlv_${Crypto.randomUUID().replaceAll("-", "")}` })),
                now
              }))
            }
            // Each row taken: its chosen records that have something to send become a chunk leased to this node
            // (the row itself when nothing of it waits, else a row split off it); the others wait in the row.
            const chunks: Array<Chunk> = []
            for (const t of taken) {
              const leased = t.chosen.flatMap((c) => {
                const item = items.get(`${t.batchEventId}:${c.recordId}`)
                return item === undefined ? [] : [item]
              })
              const lease = { recordIds: leased.map((i) => i.recordId), hosts: leased.map((i) => i.host), until, nodeId, token }
              if (t.kept.recordIds.length === 0) {
                if (leased.length === 0) {
                  yield* dieOnSchemaError(deleteFanout(t.id))
                  continue
                }
                yield* dieOnSchemaError(leaseFanout({ id: t.id, ...lease }))
                chunks.push({ fanoutId: t.id, token, items: leased })
                continue
              }
              if (t.kept.recordIds.length < t.all) yield* dieOnSchemaError(keepInFanout({ id: t.id, ...t.kept }))
              if (leased.length === 0) continue
              const split = yield* splitFanout({ batchEventId: t.batchEventId, ...lease }).pipe(
                Effect.catchTag("NoSuchElementError", Effect.die), // an INSERT … VALUES answers its row
                dieOnSchemaError
              )
              chunks.push({ fanoutId: split.id, token, items: leased })
            }
            // `found`: something was consumed, so more may be waiting; rows whose events all wait for
            // their receivers are not progress (the claim loop then waits for outcomes).
            return { chunks, found: chosen.length > 0 }
          }))
        }),

        completeChunk: Effect.fnUntraced(function*(chunk, outcomes, nodeId) {
          const now = yield* clockNow
          const byRecord = new Map(outcomes.map((o) => [o.recordId, o]))
          return yield* sql.withTransaction(Effect.gen(function*() {
            // A lost outcome only means the chunk is sent again (at-least-once): no WAL flush waited for.
            yield* asyncCommit
            const held = yield* dieOnSchemaError(heldRecords({ fanoutId: chunk.fanoutId, token: chunk.token }))
            if (Option.isNone(held)) return []
            const still = new Set(held.value.recordIds)
            const values = chunk.items.flatMap((i, ord) => {
              const o = byRecord.get(i.recordId)
              if (o === undefined || !still.has(i.recordId)) return []
              // A rendering is kept only for what may be sent again as it was: a retry. A success's never is
              // (a redelivery renders anew), so it is not written: ~2 KB less per record of row, WAL and wire.
              const keep = !o.ok
              return [{
                ord,
                id: i.id,
                batch_event_id: i.batchEventId,
                event_id: i.eventId,
                account_id: i.accountId,
                record_id: i.recordId,
                environment: i.environment,
                target: i.target,
                url: i.url,
                host: i.host,
                body: keep ? i.body : null,
                signature: keep ? i.signature : null,
                signature_next: keep ? i.signatureNext : null,
                headers: keep ? i.headers : null,
                ok: o.ok,
                started_at: o.startedAt.toISOString(),
                status_code: o.statusCode,
                latency_ms: o.latencyMs,
                error: o.error,
                retry_ms: o.retryInMillis
              }]
            })
            const written = values.length === 0
              ? []
              : yield* dieOnSchemaError(writeChunkOutcomes({ values: JSON.stringify(values), nodeId, now }))
            yield* dieOnSchemaError(deleteFanout(chunk.fanoutId))
            return written
          }))
        }),

        renderInputs: Effect.fnUntraced(function*(seqs) {
          const now = yield* clockNow
          const rows = yield* findRenderInputs({ seqs, now })
          const derived = rows.filter((r) => r.batchEventId !== null || r.priorBatchEventId !== null)
          const payloads = derived.length === 0 ? new Map<string, Record<string, unknown>>() : yield* anchorConfirmedPayloads(sql, derived.map((r) => ({
            key: r.seq,
            recordId: r.recordId ?? "",
            // the event's own anchoredAt, else the prior confirmation's
            anchoredAt: (r.batchEventId !== null ? r.anchoredAt : r.priorAnchoredAt) ?? new Date(0),
            hash: r.hash,
            chainType: r.chainType,
            networkId: r.networkId
          })))
          return rows.map((r) =>
            toRenderInput(r, r.batchEventId !== null
              ? { payload: payloads.get(r.seq) }
              // a derived prior confirmation newer than any stored one
              : r.priorBatchEventId !== null && (r.priorId === null || BigInt(r.priorBatchEventId) > BigInt(r.priorId))
              ? { prior: payloads.get(r.seq) }
              : undefined)
          )
        }),

        saveRendered: Effect.fnUntraced(function*(items) {
          if (items.length === 0) return []
          const values = JSON.stringify(items.map((i) => ({
            seq: i.seq,
            body: i.body,
            signature: i.signature,
            signature_next: i.signatureNext,
            headers: i.headers
          })))
          return yield* dieOnSchemaError(storeRendered({ values, seqs: items.map((i) => i.seq) }))
        }),

        complete: Effect.fnUntraced(function*(items, nodeId) {
          if (items.length === 0) return []
          const now = yield* clockNow
          const values = JSON.stringify(items.map((i) => ({
            seq: i.seq,
            token: i.token,
            round: i.round,
            attempt: i.attempt,
            started_at: i.startedAt.toISOString(),
            status_code: i.statusCode,
            latency_ms: i.latencyMs,
            error: i.error,
            ok: i.ok,
            retry_ms: i.retryInMillis
          })))
          return yield* dieOnSchemaError(recordOutcomes({ values, seqs: items.map((i) => i.seq), nodeId, now }))
        }),

        nextDueMillis: Effect.flatMap(clockNow, (now) =>
          nextDue(now).pipe(
            // an aggregate's one row
            Effect.catchTag("NoSuchElementError", Effect.die),
            dieOnSchemaError,
            Effect.map((row) => row.wait)
          ))
      })
    })
  )
}
