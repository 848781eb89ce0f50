/**
 * The delivery log the API serves (GET /v1/webhooks/deliveries…): deliveries with their attempts,
 * scoped to an account and environment, manual redelivery, and the retention purge of finished ones.
 * The rows are `webhook_deliveries` (one per event and target: created by the trigger on `events`, by the
 * dispatcher for a fanned-out record not delivered at its first attempt, or split out of a chunk row) and
 * the attempt log `webhook_attempt_log` (failed attempts in `webhook_attempts`, a round's successful one on
 * its delivery row), the same rows the dispatcher claims (./DeliveryClaims.ts), and the chunk rows
 * `webhook_chunk_deliveries` (a chunk's first-attempt successes of anchor.confirmed, one row per chunk and
 * receiver), whose entries the log shows as one delivery each. Each table is read through its own indexes (plans in docs/webhooks.md, "Chunks").
 */
import { type Cause, Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema, type Statement } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { Environment } from "../api/recordSchemas.ts"
import { chunkEntrySeq } from "./chunkOutcomes.ts"
import { WEBHOOK_CHANNEL } from "./DeliveryClaims.ts"
import { rowDefects } from "../db/rows.ts"
import { AttemptRow, DeliveryRow, DeliveryState, Environment as EnvironmentColumn } from "./rows.ts"

export interface Owner {
  readonly accountId: string
  readonly environment: Environment
}

export interface ListOptions {
  readonly limit: number
  /** Only deliveries older than this one (`seq`, the cursor). */
  readonly before?: string | undefined
  readonly state?: DeliveryState | undefined
  readonly recordId?: string | undefined
  readonly eventId?: string | undefined
}

/** The statements' requests: a delivery by its id, of its owner (a chunk entry's also by its seq). */
const OwnedId = Schema.Struct({ accountId: Schema.String, environment: EnvironmentColumn, id: Schema.String })
const ChunkEntryKey = Schema.Struct({ ...OwnedId.fields, seq: Schema.String })
/** A page of the log: the owner and the list's options. */
const ListRequest = Schema.Struct({
  accountId: Schema.String,
  environment: EnvironmentColumn,
  limit: Schema.Number,
  before: Schema.UndefinedOr(Schema.String),
  state: Schema.UndefinedOr(DeliveryState),
  recordId: Schema.UndefinedOr(Schema.String),
  eventId: Schema.UndefinedOr(Schema.String)
})
const IdRow = Schema.Struct({ id: Schema.String })
const CountRow = Schema.Struct({ n: Schema.Number })

export class DeliveryLog extends Context.Service<DeliveryLog, {
  /** Newest first. */
  readonly list: (owner: Owner, options: ListOptions) => Effect.Effect<ReadonlyArray<DeliveryRow>, SqlError.SqlError>
  readonly get: (owner: Owner, id: string) => Effect.Effect<DeliveryRow | undefined, SqlError.SqlError>
  /** The attempts of these deliveries (by `seq`), in the order they were made. */
  readonly attemptsOf: (seqs: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<AttemptRow>, SqlError.SqlError>
  /** A new round of attempts (0..5) starting now, re-rendered with the account's current settings. */
  readonly redeliver: (owner: Owner, id: string) => Effect.Effect<DeliveryRow | undefined, SqlError.SqlError>
  /**
   * Retention: deletes up to `limit` finished deliveries (SUCCEEDED / FAILED, not claimed) last changed
   * before `before`, with their attempt logs, in one statement. The number deleted. Events stay: they
   * are the records' history and later payloads are rendered from them.
   */
  readonly purgeFinished: (before: Date, limit: number) => Effect.Effect<number, SqlError.SqlError>
}>()("anchord/webhooks/DeliveryLog") {
  static readonly layer = Layer.effect(
    DeliveryLog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* PgClient.PgClient

      const deliveryColumns = sql`
        d.seq::text AS seq, d.id, d.event_id,
        -- a delivery of a batch event is a derived anchor.confirmed; the others name their event row
        CASE WHEN d.batch_event_id IS NOT NULL THEN 'anchor.confirmed' ELSE e.kind END AS kind, d.record_id, d.environment, d.target,
        d.url, d.state, d.round, d.attempts, d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at`

      /**
       * A chunk row's entries in the columns of `deliveryColumns`: every one a success at attempt 0 of
       * round 0. `c` is a set of chunk rows chosen through their indexes; `u` the entries.
       */
      const chunkColumns = sql`
        u.seq::text AS seq, u.id, u.event_id, 'anchor.confirmed' AS kind, u.record_id, c.environment, c.target, c.url,
        'SUCCEEDED' AS state, 0 AS round, 1 AS attempts, NULL::timestamptz AS next_attempt_at, u.status_code AS last_status_code,
        NULL::text AS last_error, c.created_at, c.delivered_at`
      const chunkEntries = (rows: Statement.Fragment) =>
        sql`${rows}
        CROSS JOIN LATERAL unnest(c.seqs, c.ids, c.event_ids, c.record_ids, c.status_codes) AS u(seq, id, event_id, record_id, status_code)`
      /** The GIN-indexed keys of a chunk row (webhook_chunk_deliveries_keys): its record ids and event ids. */
      const chunkKeys = sql`(c.record_ids || c.event_ids)`
      /** The chunk rows `c` whose seq range holds `seq` (webhook_chunk_deliveries_seqs). */
      const chunkHoldsSeq = (seq: string) => sql`WHERE int8range(c.min_seq, c.max_seq, '[]') @> ${seq}::bigint`

      const findDelivery = SqlSchema.findOneOption({
        Request: OwnedId,
        Result: DeliveryRow,
        // By its unique id behind a fence, whatever the statistics: the owner's index
        // (webhook_deliveries_account) would otherwise be a plan as good on a fresh database, and a slow one on a large owner.
        execute: ({ accountId, environment, id }) =>
          sql`SELECT ${deliveryColumns} FROM (SELECT * FROM webhook_deliveries WHERE id = ${id} OFFSET 0) d
            LEFT JOIN events e ON e.id = d.event_seq
            WHERE d.account_id = ${accountId} AND d.environment = ${environment}`
      })

      const findChunkEntry = SqlSchema.findOneOption({
        Request: ChunkEntryKey,
        Result: DeliveryRow,
        execute: ({ accountId, environment, id, seq }) =>
          sql`SELECT ${chunkColumns} FROM ${chunkEntries(sql`(SELECT * FROM webhook_chunk_deliveries c ${chunkHoldsSeq(seq)} OFFSET 0) c`)}
            WHERE u.id = ${id} AND c.account_id = ${accountId} AND c.environment = ${environment}`
      })

      const listDeliveries = SqlSchema.findAll({
        Request: ListRequest,
        Result: DeliveryRow,
        execute: (o) => {
          const own = sql.and([
            sql`d.account_id = ${o.accountId}`,
            sql`d.environment = ${o.environment}`,
            ...(o.before === undefined ? [] : [sql`d.seq < ${o.before}::bigint`]),
            ...(o.state === undefined ? [] : [sql`d.state = ${o.state}`]),
            ...(o.recordId === undefined ? [] : [sql`d.record_id = ${o.recordId}`]),
            ...(o.eventId === undefined ? [] : [sql`d.event_id = ${o.eventId}`])
          ])
          const rowsPart = sql`SELECT ${deliveryColumns}, d.seq AS seq_n FROM webhook_deliveries d LEFT JOIN events e ON e.id = d.event_seq
            WHERE ${own} ORDER BY d.seq DESC LIMIT ${o.limit}`
          // The chunk rows' entries: all SUCCEEDED anchor.confirmed, so none under another state.
          if (o.state !== undefined && o.state !== "SUCCEEDED") return rowsPart
          const entryWhere = [
            ...(o.before === undefined ? [] : [sql`u.seq < ${o.before}::bigint`]),
            ...(o.recordId === undefined ? [] : [sql`u.record_id = ${o.recordId}`]),
            ...(o.eventId === undefined ? [] : [sql`u.event_id = ${o.eventId}`])
          ]
          const entryFilter = entryWhere.length === 0 ? sql`` : sql`WHERE ${sql.and(entryWhere)}`
          const cols = sql`${chunkColumns}, u.seq AS seq_n`
          let chunkPart: Statement.Fragment
          if (o.recordId !== undefined || o.eventId !== undefined) {
            // By the keys' GIN index: the few rows holding that record or event.
            const keys = [o.recordId, o.eventId].flatMap((k) => k === undefined ? [] : [sql`${k}::text`])
            chunkPart = sql`SELECT ${cols} FROM ${
              chunkEntries(sql`(SELECT * FROM webhook_chunk_deliveries c
                WHERE ${chunkKeys} @> ARRAY[${sql.csv(keys)}] AND c.account_id = ${o.accountId} AND c.environment = ${o.environment} OFFSET 0) c`)
            } ${entryFilter}`
          } else {
            // Keyset by each row's largest seq (webhook_chunk_deliveries_account): rows entirely below the cursor, the
            // first `limit` of them newest first, hold the page's newest `limit` entries (each of them has one larger than
            // any entry of a later row); plus the rows that straddle the cursor (webhook_chunk_deliveries_seqs), few:
            // only chunks completed concurrently interleave their seqs.
            const below = sql`SELECT * FROM webhook_chunk_deliveries c WHERE c.account_id = ${o.accountId} AND c.environment = ${o.environment}
              ${o.before === undefined ? sql`` : sql`AND c.max_seq < ${o.before}::bigint`} ORDER BY c.max_seq DESC LIMIT ${o.limit}`
            const rows = o.before === undefined ? sql`(${below})` : sql`((${below}) UNION ALL (SELECT * FROM webhook_chunk_deliveries c
              WHERE int8range(c.min_seq, c.max_seq, '[]') @> int8range(${o.before}::bigint - 1, ${o.before}::bigint, '[]')
                AND c.account_id = ${o.accountId} AND c.environment = ${o.environment}))`
            chunkPart = sql`SELECT ${cols} FROM ${chunkEntries(sql`${rows} c`)} ${entryFilter}`
          }
          return sql`SELECT * FROM ((${rowsPart}) UNION ALL (${chunkPart})) x ORDER BY x.seq_n DESC LIMIT ${o.limit}`
        }
      })

      // The view's first two parts (webhook_attempts, a round's success on its row) by their indexes; the chunk
      // entries through the rows whose seq range holds one of them (webhook_chunk_deliveries_seqs).
      // The seqs go as one comma-joined parameter: one statement text whatever their number.
      const findAttempts = SqlSchema.findAll({
        Request: Schema.Array(Schema.String),
        Result: AttemptRow,
        execute: (seqs) => {
          const seqArray = sql`string_to_array(${seqs.join(",")}, ',')::bigint[]`
          return sql`SELECT delivery_seq::text AS delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms FROM (
              SELECT delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms::float8 AS retry_in_ms
              FROM webhook_attempts WHERE delivery_seq = ANY(${seqArray})
              UNION ALL
              SELECT seq, round, attempts - 1, success_started_at, last_status_code, success_latency_ms, NULL, NULL
              FROM webhook_deliveries WHERE seq = ANY(${seqArray}) AND success_started_at IS NOT NULL
              UNION ALL
              SELECT u.seq, 0, 0, u.started_at, u.status_code, u.latency_ms, NULL, NULL
              FROM (SELECT DISTINCT c.id FROM unnest(${seqArray}) AS q(seq)
                    JOIN webhook_chunk_deliveries c ON int8range(c.min_seq, c.max_seq, '[]') @> q.seq) r
              JOIN webhook_chunk_deliveries c ON c.id = r.id
              CROSS JOIN LATERAL unnest(c.seqs, c.status_codes, c.latencies_ms, c.started_at) AS u(seq, status_code, latency_ms, started_at)
              WHERE u.seq = ANY(${seqArray})
            ) a
            ORDER BY delivery_seq, round, attempt, started_at`
        }
      })

      const requeue = SqlSchema.findAll({
        Request: Schema.Struct({ ...OwnedId.fields, now: Schema.Date }),
        Result: IdRow,
        execute: ({ accountId, environment, id, now }) => {
          // The owner's delivery by its unique id behind a fence, then the row by its primary key: no plan
          // can walk the owner's index instead, whatever the statistics.
          const own = sql`SELECT o.seq FROM (SELECT seq, account_id, environment FROM webhook_deliveries WHERE id = ${id} OFFSET 0) o
            WHERE o.account_id = ${accountId} AND o.environment = ${environment}`
          // The round's successful attempt (kept on the row, not in webhook_attempts) moves to the attempt log first.
          return sql`
            WITH kept AS (
              INSERT INTO webhook_attempts (delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id)
              SELECT seq, round, attempts - 1, success_started_at, last_status_code, success_latency_ms, NULL, NULL, success_node_id
              FROM webhook_deliveries
              WHERE seq = (${own}) AND success_started_at IS NOT NULL AND NOT erased
            )
            UPDATE webhook_deliveries SET
              state = 'PENDING', round = round + 1, attempts = 0, next_attempt_at = ${now},
              locked_until = NULL, locked_by = NULL, claim_token = NULL,
              body = NULL, signature = NULL, signature_next = NULL, headers = NULL,
              success_started_at = NULL, success_latency_ms = NULL, success_node_id = NULL, updated_at = ${now}
            WHERE seq = (${own})
              -- a delivery of a record erased by a hard delete has no body and no URL left to send to (docs/api.md)
              AND NOT erased
            RETURNING id`
        }
      })

      /** Splits a chunk entry out into its own delivery row (the SQL function anchord_chunk_split). */
      const splitOut = SqlSchema.void({
        Request: ChunkEntryKey,
        execute: ({ accountId, environment, id, seq }) =>
          sql`
            SELECT anchord_chunk_split(c.id, ARRAY[${id}::text])::text AS seq
            FROM (SELECT id, account_id, environment FROM webhook_chunk_deliveries c
                  WHERE int8range(c.min_seq, c.max_seq, '[]') @> ${seq}::bigint OFFSET 0) c
            WHERE c.account_id = ${accountId} AND c.environment = ${environment}`
      })

      const Purge = Schema.Struct({ before: Schema.Date, limit: Schema.Number })
      const purgeDeliveries = SqlSchema.findOne({
        Request: Purge,
        Result: CountRow,
        execute: ({ before, limit }) =>
          sql`
            WITH old AS (
              SELECT seq FROM webhook_deliveries
              WHERE state IN ('SUCCEEDED', 'FAILED') AND updated_at < ${before} AND locked_until IS NULL
              ORDER BY seq LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            ), attempts AS (
              DELETE FROM webhook_attempts WHERE delivery_seq IN (SELECT seq FROM old)
            ), gone AS (
              DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM old) RETURNING 1
            )
            SELECT count(*)::int AS n FROM gone`
      })
      // Chunk rows go whole: all their entries finished at the same time. Like the deliveries,
      // no index of their own (the sweep reads the table once); the count is of deliveries (entries).
      const purgeChunks = SqlSchema.findOne({
        Request: Purge,
        Result: CountRow,
        execute: ({ before, limit }) =>
          sql`
            WITH old AS (
              SELECT id FROM webhook_chunk_deliveries WHERE delivered_at < ${before}
              ORDER BY id LIMIT ${Math.max(1, Math.ceil(limit / 128))}
              FOR UPDATE SKIP LOCKED
            ), gone AS (
              DELETE FROM webhook_chunk_deliveries WHERE id IN (SELECT id FROM old) RETURNING cardinality(ids) AS n
            )
            SELECT COALESCE(sum(n), 0)::int AS n FROM gone`
      })
      /** An aggregate's one row: none is a bug (a defect), like a row its schema refuses. */
      const count = (self: Effect.Effect<typeof CountRow.Type, SqlError.SqlError | Schema.SchemaError | Cause.NoSuchElementError>) =>
        rowDefects(Effect.catchTag(self, "NoSuchElementError", Effect.die))

      const get = Effect.fn("DeliveryLog.get")(function*(owner: Owner, id: string) {
        const key = { accountId: owner.accountId, environment: owner.environment, id }
        const found = yield* rowDefects(findDelivery(key))
        const seq = chunkEntrySeq(id)
        if (Option.isSome(found) || seq === undefined) return Option.getOrUndefined(found)
        // Else an entry of a chunk row: its id carries its seq, found by the rows' seq ranges.
        return Option.getOrUndefined(yield* rowDefects(findChunkEntry({ ...key, seq })))
      })

      return DeliveryLog.of({
        list: Effect.fn("DeliveryLog.list")(function*(owner, options) {
          return yield* rowDefects(listDeliveries({
            accountId: owner.accountId,
            environment: owner.environment,
            limit: options.limit,
            before: options.before,
            state: options.state,
            recordId: options.recordId,
            eventId: options.eventId
          }))
        }),

        get,

        attemptsOf: Effect.fn("DeliveryLog.attemptsOf")(function*(seqs) {
          if (seqs.length === 0) return []
          return yield* rowDefects(findAttempts(seqs))
        }),

        redeliver: Effect.fn("DeliveryLog.redeliver")(function*(owner, id) {
          const now = new Date(yield* Clock.currentTimeMillis)
          const key = { accountId: owner.accountId, environment: owner.environment, id }
          let rows = yield* rowDefects(requeue({ ...key, now }))
          // A chunk entry is split out into its own row first, then redelivered as any delivery is.
          // Requeued whether or not this call split it: a concurrent redelivery may have split it out a moment ago.
          const seq = chunkEntrySeq(id)
          if (rows.length === 0 && seq !== undefined) {
            yield* rowDefects(splitOut({ ...key, seq }))
            rows = yield* rowDefects(requeue({ ...key, now }))
          }
          if (rows.length === 0) return undefined
          // The answer is the delivery as re-queued; read it before waking the dispatchers, which may
          // otherwise have sent it already by the time we read.
          const requeued = yield* get(owner, id)
          yield* pg.notify(WEBHOOK_CHANNEL, "")
          return requeued
        }),

        purgeFinished: Effect.fn("DeliveryLog.purgeFinished")(function*(before, limit) {
          const rows = yield* count(purgeDeliveries({ before, limit }))
          const chunks = yield* count(purgeChunks({ before, limit }))
          return rows.n + chunks.n
        })
      })
    })
  )
}
