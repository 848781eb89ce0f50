/**
 * The delivery log the API serves (GET /v1/webhooks/deliveries…): deliveries with their attempts,
 * scoped to an account and environment, manual redelivery, and the retention purge of finished ones.
 * The rows are `webhook_deliveries` (one per event and target, created by the trigger on `events` or
 * the dispatcher's fan-out of `batch_events`) and the attempt log `webhook_attempt_log` (failed attempts in
 * `webhook_attempts`, a round's successful one on its delivery row: migration 0011), the same rows the
 * dispatcher claims (./DeliveryClaims.ts), and the chunk rows `webhook_chunk_deliveries` (migration 0023: a
 * chunk's first-attempt successes of anchor.confirmed, one row per chunk and receiver), whose entries the log shows
 * as one delivery each. Each table is read through its own indexes (plans in docs/webhooks.md, "Chunks").
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { Environment } from "../api/recordSchemas.ts"
import { chunkEntrySeq, WEBHOOK_CHANNEL } from "./DeliveryClaims.ts"
import { AttemptRow, decodeRows, DeliveryRow, type DeliveryState } from "./rows.ts"

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

const deliveryColumns = `
  d.seq::text AS seq, d.id, d.event_id,
  -- a delivery of a batch event (migration 0012) is an anchor.confirmed; the others name their event row
  CASE WHEN d.batch_event_id IS NOT NULL THEN 'anchor.confirmed' ELSE e.kind END AS kind, d.record_id, d.environment, d.target, d.url, d.state, d.round, d.attempts,
  d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at`

/**
 * A chunk row's entries (migration 0023) in the columns of `deliveryColumns`: every one a success at attempt 0 of
 * round 0. `c` is a set of chunk rows chosen through their indexes; `u` the entries.
 */
const chunkColumns = `
  u.seq::text AS seq, u.id, u.event_id, 'anchor.confirmed' AS kind, u.record_id, c.environment, c.target, c.url,
  'SUCCEEDED' AS state, 0 AS round, 1 AS attempts, NULL::timestamptz AS next_attempt_at, u.status_code AS last_status_code,
  NULL::text AS last_error, c.created_at, c.delivered_at`
const chunkEntries = (rows: string) =>
  `${rows}
  CROSS JOIN LATERAL unnest(c.seqs, c.ids, c.event_ids, c.record_ids, c.status_codes) AS u(seq, id, event_id, record_id, status_code)`
/** The GIN-indexed keys of a chunk row (webhook_chunk_deliveries_keys): its record ids and event ids. */
const CHUNK_KEYS = "(c.record_ids || c.event_ids)"
/** The chunk rows `c` whose seq range holds the seq in parameter `param` (webhook_chunk_deliveries_seqs). */
const CHUNK_HOLDS_SEQ = (param: string) => `WHERE int8range(c.min_seq, c.max_seq, '[]') @> ${param}::bigint`

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
      const deliveries = decodeRows(DeliveryRow)
      const attempts = decodeRows(AttemptRow)

      const get = Effect.fn("DeliveryLog.get")(function*(owner: Owner, id: string) {
        const rows = yield* sql.unsafe(
          // By its unique id behind a fence, whatever the statistics: the owner's index
          // (webhook_deliveries_account) would otherwise be a plan as good on a fresh database (issue 25).
          `SELECT ${deliveryColumns} FROM (SELECT * FROM webhook_deliveries WHERE id = $1 OFFSET 0) d
           LEFT JOIN events e ON e.id = d.event_seq
           WHERE d.account_id = $2 AND d.environment = $3`,
          [id, owner.accountId, owner.environment]
        )
        const found = (yield* deliveries(rows))[0]
        const seq = chunkEntrySeq(id)
        if (found !== undefined || seq === undefined) return found
        // Else an entry of a chunk row (migration 0023): its id carries its seq, found by the rows' seq ranges.
        const entries = yield* sql.unsafe(
          `SELECT ${chunkColumns} FROM ${chunkEntries(`(SELECT * FROM webhook_chunk_deliveries c ${CHUNK_HOLDS_SEQ("$4")} OFFSET 0) c`)}
           WHERE u.id = $1 AND c.account_id = $2 AND c.environment = $3`,
          [id, owner.accountId, owner.environment, seq]
        )
        return (yield* deliveries(entries))[0]
      })

      /** Splits a chunk entry out into its own delivery row (migration 0023's anchord_chunk_split). */
      const splitOut = (owner: Owner, id: string, seq: string) =>
        Effect.asVoid(sql<{ seq: string }>`
          SELECT anchord_chunk_split(c.id, ARRAY[${id}::text])::text AS seq
          FROM (SELECT id, account_id, environment FROM webhook_chunk_deliveries c
                WHERE int8range(c.min_seq, c.max_seq, '[]') @> ${seq}::bigint OFFSET 0) c
          WHERE c.account_id = ${owner.accountId} AND c.environment = ${owner.environment}`)

      return DeliveryLog.of({
        list: Effect.fn("DeliveryLog.list")(function*(owner, options) {
          const params: Array<unknown> = [owner.accountId, owner.environment, options.limit]
          const where: Array<string> = []
          const add = (clause: (n: number) => string, value: unknown) => {
            params.push(value)
            where.push(clause(params.length))
            return params.length
          }
          const before = options.before === undefined ? undefined : add((n) => `d.seq < $${n}::bigint`, options.before)
          if (options.state !== undefined) add((n) => `d.state = $${n}`, options.state)
          const record = options.recordId === undefined ? undefined : add((n) => `d.record_id = $${n}`, options.recordId)
          const event = options.eventId === undefined ? undefined : add((n) => `d.event_id = $${n}`, options.eventId)
          const own = `d.account_id = $1 AND d.environment = $2 ${where.map((w) => `AND ${w}`).join(" ")}`
          const rowsPart = `SELECT ${deliveryColumns}, d.seq AS seq_n FROM webhook_deliveries d LEFT JOIN events e ON e.id = d.event_seq
             WHERE ${own} ORDER BY d.seq DESC LIMIT $3`
          // The chunk rows' entries (migration 0023): all SUCCEEDED anchor.confirmed, so none under another state.
          const chunkPart = options.state !== undefined && options.state !== "SUCCEEDED" ? undefined : (() => {
            const entryWhere = [
              before === undefined ? undefined : `u.seq < $${before}::bigint`,
              record === undefined ? undefined : `u.record_id = $${record}`,
              event === undefined ? undefined : `u.event_id = $${event}`
            ].filter((w) => w !== undefined)
            const cols = `${chunkColumns}, u.seq AS seq_n`
            const entryFilter = entryWhere.length === 0 ? "" : `WHERE ${entryWhere.join(" AND ")}`
            if (record !== undefined || event !== undefined) {
              // By the keys' GIN index: the few rows holding that record or event.
              const keys = [record, event].filter((k) => k !== undefined).map((k) => `$${k}::text`).join(", ")
              return `SELECT ${cols} FROM ${
                chunkEntries(`(SELECT * FROM webhook_chunk_deliveries c
                WHERE ${CHUNK_KEYS} @> ARRAY[${keys}] AND c.account_id = $1 AND c.environment = $2 OFFSET 0) c`)
              } ${entryFilter}`
            }
            // Keyset by each row's largest seq (webhook_chunk_deliveries_account): rows entirely below the cursor, the
            // first $3 of them newest first, hold the page's newest $3 entries (each of them has one larger than any
            // entry of a later row); plus the rows that straddle the cursor (webhook_chunk_deliveries_seqs), few: only
            // chunks completed concurrently interleave their seqs.
            const below = `SELECT * FROM webhook_chunk_deliveries c WHERE c.account_id = $1 AND c.environment = $2
              ${before === undefined ? "" : `AND c.max_seq < $${before}::bigint`} ORDER BY c.max_seq DESC LIMIT $3`
            const straddling = before === undefined ? undefined : `SELECT * FROM webhook_chunk_deliveries c
              WHERE int8range(c.min_seq, c.max_seq, '[]') @> int8range($${before}::bigint - 1, $${before}::bigint, '[]')
                AND c.account_id = $1 AND c.environment = $2`
            const rowsSql = straddling === undefined ? `(${below})` : `((${below}) UNION ALL (${straddling}))`
            return `SELECT ${cols} FROM ${chunkEntries(`${rowsSql} c`)} ${entryFilter}`
          })()
          const rows = yield* sql.unsafe(
            chunkPart === undefined
              ? rowsPart
              : `SELECT * FROM ((${rowsPart}) UNION ALL (${chunkPart})) x ORDER BY x.seq_n DESC LIMIT $3`,
            params
          )
          return yield* deliveries(rows)
        }),

        get,

        attemptsOf: Effect.fn("DeliveryLog.attemptsOf")(function*(seqs) {
          if (seqs.length === 0) return []
          // The view's first two parts (webhook_attempts, a round's success on its row) by their indexes; the chunk
          // entries (migration 0023) through the rows whose seq range holds one of them (webhook_chunk_deliveries_seqs).
          const rows = yield* sql.unsafe(
            `SELECT delivery_seq::text AS delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms FROM (
               SELECT delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms::float8 AS retry_in_ms
               FROM webhook_attempts WHERE delivery_seq = ANY(string_to_array($1, ',')::bigint[])
               UNION ALL
               SELECT seq, round, attempts - 1, success_started_at, last_status_code, success_latency_ms, NULL, NULL
               FROM webhook_deliveries WHERE seq = ANY(string_to_array($1, ',')::bigint[]) AND success_started_at IS NOT NULL
               UNION ALL
               SELECT u.seq, 0, 0, u.started_at, u.status_code, u.latency_ms, NULL, NULL
               FROM (SELECT DISTINCT c.id FROM unnest(string_to_array($1, ',')::bigint[]) AS q(seq)
                     JOIN webhook_chunk_deliveries c ON int8range(c.min_seq, c.max_seq, '[]') @> q.seq) r
               JOIN webhook_chunk_deliveries c ON c.id = r.id
               CROSS JOIN LATERAL unnest(c.seqs, c.status_codes, c.latencies_ms, c.started_at) AS u(seq, status_code, latency_ms, started_at)
               WHERE u.seq = ANY(string_to_array($1, ',')::bigint[])
             ) a
             ORDER BY delivery_seq, round, attempt, started_at`,
            [seqs.join(",")]
          )
          return yield* attempts(rows)
        }),

        redeliver: Effect.fn("DeliveryLog.redeliver")(function*(owner, id) {
          const now = new Date(yield* Clock.currentTimeMillis)
          // The owner's delivery by its unique id behind a fence, then the row by its primary key: no plan
          // can walk the owner's index instead, whatever the statistics (issue 25).
          const own = sql`SELECT o.seq FROM (SELECT seq, account_id, environment FROM webhook_deliveries WHERE id = ${id} OFFSET 0) o
            WHERE o.account_id = ${owner.accountId} AND o.environment = ${owner.environment}`
          // The round's successful attempt (kept on the row, migration 0011) moves to the attempt log first.
          const requeue = sql<{ id: string }>`
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
          let rows = yield* requeue
          // A chunk entry (migration 0023) is split out into its own row first, then redelivered as any delivery is.
          // Requeued whether or not this call split it: a concurrent redelivery may have split it out a moment ago.
          const seq = chunkEntrySeq(id)
          if (rows.length === 0 && seq !== undefined) {
            yield* splitOut(owner, id, seq)
            rows = yield* requeue
          }
          if (rows.length === 0) return undefined
          // The answer is the delivery as re-queued; read it before waking the dispatchers, which may
          // otherwise have sent it already by the time we read.
          const requeued = yield* get(owner, id)
          yield* pg.notify(WEBHOOK_CHANNEL, "")
          return requeued
        }),

        purgeFinished: Effect.fn("DeliveryLog.purgeFinished")(function*(before, limit) {
          const rows = yield* sql<{ n: number }>`
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
          // Chunk rows (migration 0023) go whole: all their entries finished at the same time. Like the deliveries,
          // no index of their own (the sweep reads the table once); the count is of deliveries (entries).
          const chunks = yield* sql<{ n: number }>`
            WITH old AS (
              SELECT id FROM webhook_chunk_deliveries WHERE delivered_at < ${before}
              ORDER BY id LIMIT ${Math.max(1, Math.ceil(limit / 128))}
              FOR UPDATE SKIP LOCKED
            ), gone AS (
              DELETE FROM webhook_chunk_deliveries WHERE id IN (SELECT id FROM old) RETURNING cardinality(ids) AS n
            )
            SELECT COALESCE(sum(n), 0)::int AS n FROM gone`
          return (rows[0]?.n ?? 0) + (chunks[0]?.n ?? 0)
        })
      })
    })
  )
}
