/**
 * The request log of batched deliveries (GET /v1/webhooks/requests…): one row per HTTP request that carried a
 * batch (./batch.ts), with the events it carried and the receiver's answer. Each event's own delivery (state,
 * attempts, redelivery) stays in the delivery log (./DeliveryLog.ts); this is what went over the wire together.
 * Written by the dispatcher once per batch request, read by the owner's index newest first, by a request id
 * (the batch's webhook-id: a retry of the same events has the same one) or by a record or event it carried (GIN).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import type { Owner } from "./DeliveryLog.ts"
import { rowDefects } from "../db/rows.ts"
import { DeliveryEventKind, Environment } from "./rows.ts"

/** `text[]` columns read as JSON text and parsed once, here. */
const TextArrayJson = Schema.fromJsonString(Schema.Array(Schema.String))

/** A batch request as sent, with the receiver's answer. */
const SentRequest = Schema.Struct({
  /** `whb_…`, the request's webhook-id. */
  id: Schema.String,
  accountId: Schema.String,
  environment: Environment,
  url: Schema.String,
  kind: Schema.String,
  eventIds: Schema.Array(Schema.String),
  /** The events' records ("" for an event of no record), in the events' order. */
  recordIds: Schema.Array(Schema.String),
  startedAt: Schema.Date,
  statusCode: Schema.NullOr(Schema.Number),
  latencyMs: Schema.Number,
  error: Schema.NullOr(Schema.String),
  /** The events a 2xx answer named as not taken. */
  failedEventIds: Schema.Array(Schema.String),
  nodeId: Schema.String
})
export type SentRequest = typeof SentRequest.Type

/** A request of the log (`seq`: the table's key as text, the list's cursor). */
export const RequestRow = Schema.Struct({
  seq: Schema.String,
  id: Schema.String,
  url: Schema.String,
  kind: DeliveryEventKind,
  eventIds: TextArrayJson,
  recordIds: TextArrayJson,
  startedAt: Schema.Date,
  statusCode: Schema.NullOr(Schema.Number),
  latencyMs: Schema.Number,
  error: Schema.NullOr(Schema.String),
  failedEventIds: TextArrayJson
})
export type RequestRow = typeof RequestRow.Type

export interface RequestListOptions {
  readonly limit: number
  /** Only requests older than this one (`seq`, the cursor). */
  readonly before?: string | undefined
  readonly recordId?: string | undefined
  readonly eventId?: string | undefined
}

const OwnerFields = { accountId: Schema.String, environment: Environment }
const ListRequest = Schema.Struct({
  ...OwnerFields,
  limit: Schema.Number,
  before: Schema.UndefinedOr(Schema.String),
  keys: Schema.Array(Schema.String)
})
const CountRow = Schema.Struct({ n: Schema.Number })

/** The most requests one id lists: retries of the same events (six attempts a round). */
const ATTEMPTS_SHOWN = 100

export class RequestLog extends Context.Service<RequestLog, {
  readonly record: (request: SentRequest) => Effect.Effect<void, SqlError.SqlError>
  /** Newest first. */
  readonly list: (owner: Owner, options: RequestListOptions) => Effect.Effect<ReadonlyArray<RequestRow>, SqlError.SqlError>
  /** Every request sent under this id (the first attempt and the retries of the same events), newest first. */
  readonly attemptsOf: (owner: Owner, id: string) => Effect.Effect<ReadonlyArray<RequestRow>, SqlError.SqlError>
  /** Retention: deletes up to `limit` requests started before `before`; the number deleted. */
  readonly purge: (before: Date, limit: number) => Effect.Effect<number, SqlError.SqlError>
}>()("anchord/webhooks/RequestLog") {
  static readonly layer = Layer.effect(
    RequestLog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const textArray = (values: ReadonlyArray<string>) => sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`
      const columns = sql`r.seq::text AS seq, r.id, r.url, r.kind, array_to_json(r.event_ids)::text AS event_ids,
        array_to_json(r.record_ids)::text AS record_ids, r.started_at, r.status_code, r.latency_ms, r.error,
        array_to_json(r.failed_event_ids)::text AS failed_event_ids`

      const insert = SqlSchema.void({
        Request: SentRequest,
        execute: (r) =>
          sql`INSERT INTO webhook_requests (id, account_id, environment, url, kind, event_ids, record_ids, started_at, status_code,
              latency_ms, error, failed_event_ids, node_id)
            VALUES (${r.id}, ${r.accountId}, ${r.environment}, ${r.url}, ${r.kind}, ${textArray(r.eventIds)}, ${textArray(r.recordIds)},
              ${r.startedAt}, ${r.statusCode}, ${Math.round(r.latencyMs)}, ${r.error}, ${textArray(r.failedEventIds)}, ${r.nodeId})`
      })

      const listRequests = SqlSchema.findAll({
        Request: ListRequest,
        Result: RequestRow,
        execute: ({ accountId, before, environment, keys, limit }) =>
          sql`SELECT ${columns} FROM webhook_requests r
            WHERE r.account_id = ${accountId} AND r.environment = ${environment}
              ${before === undefined ? sql`` : sql`AND r.seq < ${before}::bigint`}
              ${keys.length === 0 ? sql`` : sql`AND (r.record_ids || r.event_ids) @> ${textArray(keys)}`}
            ORDER BY r.seq DESC LIMIT ${limit}`
      })

      const byId = SqlSchema.findAll({
        Request: Schema.Struct({ ...OwnerFields, id: Schema.String }),
        Result: RequestRow,
        execute: ({ accountId, environment, id }) =>
          sql`SELECT ${columns} FROM webhook_requests r
            WHERE r.id = ${id} AND r.account_id = ${accountId} AND r.environment = ${environment}
            ORDER BY r.seq DESC LIMIT ${ATTEMPTS_SHOWN}`
      })

      const purgeOld = SqlSchema.findOne({
        Request: Schema.Struct({ before: Schema.Date, limit: Schema.Number }),
        Result: CountRow,
        execute: ({ before, limit }) =>
          sql`WITH old AS (SELECT seq FROM webhook_requests WHERE started_at < ${before} ORDER BY seq LIMIT ${limit}),
              gone AS (DELETE FROM webhook_requests WHERE seq IN (SELECT seq FROM old) RETURNING 1)
            SELECT count(*)::int AS n FROM gone`
      })

      return RequestLog.of({
        record: Effect.fn("RequestLog.record")(function*(request) {
          yield* rowDefects(insert(request))
        }),
        list: Effect.fn("RequestLog.list")(function*(owner, options) {
          const keys = [options.recordId, options.eventId].filter((k): k is string => k !== undefined)
          return yield* rowDefects(listRequests({ ...owner, limit: options.limit, before: options.before, keys }))
        }),
        attemptsOf: Effect.fn("RequestLog.attemptsOf")(function*(owner, id) {
          return yield* rowDefects(byId({ ...owner, id }))
        }),
        purge: Effect.fn("RequestLog.purge")(function*(before, limit) {
          return (yield* rowDefects(Effect.catchTag(purgeOld({ before, limit }), "NoSuchElementError", Effect.die))).n
        })
      })
    })
  )
}
