/**
 * Writing and reading the outbox (`events`): producers append inside their own transaction (the
 * `SqlClient` they are in), the webhook renderer decodes. Event ids are stable across retries: they are
 * the receivers' dedupe key (X-Service-Event-Id, webhook-id).
 */
import * as Crypto from "node:crypto"
import { Effect, Schema } from "effect"
import { type SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { OutboxEvent } from "./events.ts"

export const newEventId = () => `evt_${Crypto.randomBytes(12).toString("hex")}`

const decodeEvent = Schema.decodeUnknownSync(OutboxEvent)

const encode = Schema.encodeSync(OutboxEvent)

/**
 * An event's payload as stored (the event without `kind`, which has its own column): what an `events` row holds, and
 * what a derived `anchor.confirmed` (built from a batch event, never stored) would hold had it been stored.
 */
export const storedPayload = (event: OutboxEvent): Record<string, unknown> => {
  const { kind: _, ...payload } = encode(event) as { readonly kind: string } & Record<string, unknown>
  return payload
}

/** An event row to write: its id (drawn once, before any retry), its account, the event through the outbox schema. */
const EventInsert = Schema.Struct({ eventId: Schema.String, accountId: Schema.String, event: OutboxEvent })
const EventInserts = Schema.Array(EventInsert)
/** The row an append answers: its key (`events.id`, bigint, as text). */
const SeqRow = Schema.Struct({ seq: Schema.String })

/** The row of one encoded event: `kind` in its column, the rest as the payload. */
const toRow = ({ accountId, event, eventId }: typeof EventInsert.Encoded) => {
  const { kind, ...payload } = event
  return { event_id: eventId, account_id: accountId, record_id: event.recordId, kind, payload }
}

/**
 * Appends events in one statement (in the caller's transaction: the state change and its events
 * commit together or not at all). The number written.
 */
export const append = (
  sql: SqlClient.SqlClient,
  events: ReadonlyArray<{ readonly accountId: string; readonly event: OutboxEvent }>
): Effect.Effect<number, SqlError.SqlError> =>
  events.length === 0 ? Effect.succeed(0) : SqlSchema.void({
    Request: EventInserts,
    execute: (rows) =>
      sql`
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT x.event_id, x.account_id, x.record_id, x.kind, x.payload
        FROM jsonb_to_recordset(${JSON.stringify(rows.map(toRow))}::jsonb)
          AS x(event_id text, account_id text, record_id text, kind text, payload jsonb)`
  })(events.map((e) => ({ eventId: newEventId(), accountId: e.accountId, event: e.event }))).pipe(
    // An event its schema refuses to encode is a producer's bug: a defect. SQL errors stay typed.
    rowDefects,
    Effect.as(events.length)
  )

/** Appends one event (in the caller's transaction) and answers its row's key and event id. */
export const appendOne = (
  sql: SqlClient.SqlClient,
  accountId: string,
  event: OutboxEvent
): Effect.Effect<{ readonly seq: string; readonly eventId: string }, SqlError.SqlError> => {
  const eventId = newEventId()
  return SqlSchema.findOne({
    Request: EventInsert,
    Result: SeqRow,
    execute: (insert) => {
      const row = toRow(insert)
      return sql`
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        VALUES (${row.event_id}, ${row.account_id}, ${row.record_id}, ${row.kind}, ${JSON.stringify(row.payload)}::jsonb)
        RETURNING id::text AS seq`
    }
  })({ eventId, accountId, event }).pipe(
    // An INSERT … VALUES answers its one row.
    Effect.catchTag("NoSuchElementError", Effect.die),
    rowDefects,
    Effect.map(({ seq }) => ({ seq, eventId }))
  )
}

/** An event as stored (kind column + payload), decoded; throws on a row no producer could have written. */
export const decode = (kind: string, payload: Record<string, unknown>): OutboxEvent => decodeEvent({ ...payload, kind })
