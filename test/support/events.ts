/**
 * Every event as `all_events` lists it, with its payload: a stored event's from its row, a derived `anchor.confirmed`'s
 * (migration 0012; NULL in the view since 0024) assembled by the node's one assembly (src/anchoring/anchorViews.ts
 * `anchorConfirmedPayloads`, the dispatcher's) in the stored form of src/outbox/events.ts (`Outbox.storedPayload`), as
 * the view itself assembled it in SQL before 0024.
 */
import { Effect, Redacted } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { anchorReads } from "../../src/anchoring/anchorViews.ts"
import { pgClientLayer } from "../../src/db/Database.ts"
import { decode, storedPayload } from "../../src/outbox/Outbox.ts"

export interface EventRow {
  readonly id: string
  readonly eventId: string
  readonly kind: string
  readonly recordId: string
  readonly payload: Record<string, any>
}

/** The events of `recordIds` (every event without them), ordered by id then record id. */
export const allEventsOf = (
  sql: SqlClient.SqlClient,
  recordIds?: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<EventRow>, SqlError.SqlError> =>
  Effect.gen(function*() {
    const rows = yield* sql<{
      id: string
      eventId: string
      kind: string
      recordId: string
      payloadText: string | null
      anchoredAt: Date | null
      hash: string | null
      chainType: string | null
      networkId: string | null
    }>`
      SELECT e.id::text AS id, e.event_id, e.kind, e.record_id, e.payload::text AS payload_text,
        cb.anchored_at, r.hash, r.chain_type, r.network_id
      FROM all_events e
      -- a derived event: its completing batch (the record's anchoredAt) and its record
      LEFT JOIN batch_events be ON e.payload IS NULL AND be.id = e.id
      LEFT JOIN anchor_batches cb ON cb.id = be.batch_id
      LEFT JOIN records r ON e.payload IS NULL AND r.id = e.record_id
      ${recordIds === undefined ? sql`` : sql`WHERE e.record_id IN ${sql.in(recordIds)}`}
      ORDER BY e.id, e.record_id`
    const derived = rows.filter((r) => r.payloadText === null)
    const payloads = yield* anchorReads(sql).anchorConfirmedPayloads(derived.map((r) => ({ ...r, key: `${r.id}:${r.recordId}`, anchoredAt: r.anchoredAt! })))
    return rows.map((r) => ({
      id: r.id,
      eventId: r.eventId,
      kind: r.kind,
      recordId: r.recordId,
      payload: r.payloadText === null ? storedPayload(decode("anchor.confirmed", payloads.get(`${r.id}:${r.recordId}`)!)) : JSON.parse(r.payloadText)
    }))
  })

/** `allEventsOf` on the database at `url` (its own pool, closed after). */
export const allEvents = (url: string, recordIds?: ReadonlyArray<string>): Promise<ReadonlyArray<EventRow>> =>
  Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => allEventsOf(sql, recordIds)).pipe(
    Effect.provide(pgClientLayer(Redacted.make(url)))
  ))
