/**
 * A leased chunk's outcomes, written once (./DeliveryClaims.ts composes it): for the records still in the leased
 * `webhook_fanouts` row, the first-attempt successes in one `webhook_chunk_deliveries` row per receiver (per-record
 * arrays), each failure in a `webhook_deliveries` row of its own on the retry ladder with its attempt logged; the
 * leased row goes. A lost lease writes nothing: another node sends the chunk again (at-least-once).
 */
import { Effect, Option, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import type { Completion } from "./claimedDeliveries.ts"
import { clockNow, type DispatcherSql } from "./dispatcherSql.ts"
import type { Chunk } from "./fanOut.ts"
import type { FanoutRows } from "./fanoutRows.ts"
import { rowDefects } from "../db/rows.ts"
import { DeliveryState } from "./rows.ts"

/** A chunk record's first attempt: an outcome as a claimed delivery's, by record. */
export interface ChunkOutcome extends Omit<Completion, "seq" | "token" | "round" | "attempt"> {
  readonly recordId: string
}

/** A chunk record's delivery as completeChunk wrote it: a delivery row of its own, or an entry of a chunk row. */
const ChunkDelivery = Schema.Struct({
  recordId: Schema.String,
  id: Schema.String,
  state: DeliveryState,
  nextAttemptAt: Schema.NullOr(Schema.Date)
})
export type ChunkDelivery = typeof ChunkDelivery.Type

/** The seq a chunk entry's delivery id carries (`chunkEntryId` below), undefined for an id of another form. */
export const chunkEntrySeq = (id: string): string | undefined => {
  if (!/^dlv_[0-7][0-9a-f]{31}$/.test(id)) return undefined
  return BigInt(`0x${id.slice(4, 20)}`).toString()
}

/** DeliveryClaims' completeChunk (documented on its interface). */
export const makeChunkOutcomes = ({ asyncCommit, sql }: DispatcherSql, fanouts: FanoutRows) => {
  /**
   * A chunk entry's delivery id: `dlv_` + its seq in 16 hex digits + the last 16 of the id drawn at fan-out
   * (random). The same form as every delivery id (`dlv_` + 32 hex); the seq in it finds the entry through the
   * chunk rows' seq ranges (DeliveryLog), so no index over every entry's id is written. The seq was visible already
   * (the list's cursor is the seq in base64url).
   */
  const chunkEntryId = sql`'dlv_' || lpad(to_hex(v.seq), 16, '0') || right(v.id, 16)`

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
          -- the successes: one row per receiver of the chunk, the outcomes as arrays
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

  const completeChunk = Effect.fnUntraced(function*(chunk: Chunk, outcomes: ReadonlyArray<ChunkOutcome>, nodeId: string) {
    const now = yield* clockNow
    const outcomeByRecord = new Map(outcomes.map((outcome) => [outcome.recordId, outcome]))
    return yield* sql.withTransaction(Effect.gen(function*() {
      // A lost outcome only means the chunk is sent again (at-least-once): no WAL flush waited for.
      yield* asyncCommit
      const held = yield* rowDefects(fanouts.heldRecords({ fanoutId: chunk.fanoutId, token: chunk.token }))
      if (Option.isNone(held)) return []
      const stillHeld = new Set(held.value.recordIds)
      const values = chunk.items.flatMap((item, ord) => {
        const outcome = outcomeByRecord.get(item.recordId)
        if (outcome === undefined || !stillHeld.has(item.recordId)) return []
        // A rendering is kept only for what may be sent again as it was: a retry. A success's never is
        // (a redelivery renders anew), so it is not written: ~2 KB less per record of row, WAL and wire.
        const keep = !outcome.ok
        return [{
          ord,
          id: item.id,
          batch_event_id: item.batchEventId,
          event_id: item.eventId,
          account_id: item.accountId,
          record_id: item.recordId,
          environment: item.environment,
          target: item.target,
          url: item.url,
          host: item.host,
          body: keep ? item.body : null,
          signature: keep ? item.signature : null,
          signature_next: keep ? item.signatureNext : null,
          headers: keep ? item.headers : null,
          ok: outcome.ok,
          started_at: outcome.startedAt.toISOString(),
          status_code: outcome.statusCode,
          latency_ms: outcome.latencyMs,
          error: outcome.error,
          retry_ms: outcome.retryInMillis
        }]
      })
      const written: ReadonlyArray<ChunkDelivery> = values.length === 0
        ? []
        : yield* rowDefects(writeChunkOutcomes({ values: JSON.stringify(values), nodeId, now }))
      yield* rowDefects(fanouts.deleteFanout(chunk.fanoutId))
      return written
    }))
  })

  return { completeChunk }
}
