/**
 * The fan-out of `anchor.confirmed` (./DeliveryClaims.ts composes it). A confirmation writes one `batch_events` row
 * per account, and its trigger `webhook_fanouts` rows (the records with a receiver, 128 per row, each with its
 * host). One step takes records from the oldest unleased rows within the per-host caps, assembles each record's
 * event from its anchors (`anchorConfirmedPayloads`), renders and signs the bodies in the node, and leases the
 * records taken to this node as chunks (the row itself, or a row split off it), in one transaction. No delivery row
 * is written before the chunk's outcomes (./chunkOutcomes.ts).
 */
import { Clock, Effect, Schema } from "effect"
import { type SqlError, SqlSchema } from "effect/sql"
import * as Crypto from "node:crypto"
import { anchorReads } from "../anchoring/anchorViews.ts"
import type { Claimed } from "./claimedDeliveries.ts"
import { type DispatcherSql, hostPortSql } from "./dispatcherSql.ts"
import type { FanoutRow, FanoutRows } from "./fanoutRows.ts"
import { render, type StableHeaders } from "./payload.ts"
import { RenderRow, toRenderInput } from "./renderInputs.ts"
import { inOverlap } from "./rotation.ts"
import { rowDefects } from "../db/rows.ts"
import { DeliveryMode, DeliveryTarget, Environment } from "./rows.ts"

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
 * A leased `webhook_fanouts` row: records of one batch event this node sends, then writes the outcomes of at once
 * (completeChunk). Its lease expiring (a crash) gives it to the next fan-out step, whole.
 */
export interface Chunk {
  readonly fanoutId: string
  readonly token: string
  readonly items: ReadonlyArray<ChunkItem>
}

/** What one fan-out step did: the chunks it leased to this node, and whether more may be waiting. */
export interface FanOut {
  readonly chunks: ReadonlyArray<Chunk>
  /** Some events were taken (more may wait); false when there were none, or all wait for their receivers. */
  readonly found: boolean
}

/** One fan-out step (DeliveryClaims.fanOut, documented there). */
export type FanOutStep = (
  limit: number,
  leaseMillis: number,
  nodeId: string,
  token: string,
  perHost: number,
  inFlight: ReadonlyMap<string, number>
) => Effect.Effect<FanOut, SqlError.SqlError>

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

/** A fan-out row as one step divides it: the records it takes, and those that wait in the row for their receivers. */
interface RowDivision {
  readonly fanoutId: string
  readonly batchEventId: string
  readonly recordCount: number
  readonly waiting: { readonly recordIds: Array<string>; readonly hosts: Array<string> }
  readonly taken: Array<{ readonly recordId: string; readonly host: string }>
}

/**
 * Takes up to `limit` records of the rows, in order, each while its receiver has fewer than `perHost` attempts in
 * flight from this node (counting those taken here); the others wait in their row, in order, so a receiver at its
 * cap holds back only its own events. The rows after the one that reaches the limit are left as they are.
 */
export const divideByHostCaps = (
  rows: ReadonlyArray<FanoutRow>,
  limit: number,
  perHost: number,
  inFlight: ReadonlyMap<string, number>
): ReadonlyArray<RowDivision> => {
  const inFlightByHost = new Map(inFlight)
  const divisions: Array<RowDivision> = []
  let takenCount = 0
  for (const row of rows) {
    const division: RowDivision = {
      fanoutId: row.id,
      batchEventId: row.batchEventId,
      recordCount: row.recordIds.length,
      waiting: { recordIds: [], hosts: [] },
      taken: []
    }
    row.recordIds.forEach((recordId, index) => {
      const host = row.hosts[index] ?? ""
      const hostInFlight = inFlightByHost.get(host) ?? 0
      if (takenCount >= limit || hostInFlight >= perHost) {
        division.waiting.recordIds.push(recordId)
        division.waiting.hosts.push(host)
        return
      }
      inFlightByHost.set(host, hostInFlight + 1)
      takenCount++
      division.taken.push({ recordId, host })
    })
    divisions.push(division)
    if (takenCount >= limit) break
  }
  return divisions
}

/** A delivery id drawn in the node: `dlv_` + 32 hex digits. */
const newDeliveryId = () => `dlv_${Crypto.randomUUID().replaceAll("-", "")}`

/**
 * Renders and signs each event: the chunk items by event key, and the events that could not be rendered (inserted
 * unclaimed and bodiless by the caller: the claim's render records the failure).
 */
const renderChunkItems = (events: ReadonlyArray<FanRow>, payloads: ReadonlyMap<string, Record<string, unknown>>) => {
  const items = new Map<string, ChunkItem>()
  const unrendered: Array<FanRow> = []
  for (const event of events) {
    const input = toRenderInput(event, { payload: payloads.get(event.seq) })
    let rendered: ReturnType<typeof render>
    try {
      rendered = render(input)
    } catch {
      unrendered.push(event)
      continue
    }
    items.set(event.seq, {
      id: newDeliveryId(),
      batchEventId: event.batchEventId,
      eventId: event.eventId,
      accountId: event.accountId,
      recordId: event.recordId,
      environment: event.environment,
      target: event.target,
      url: event.url,
      host: event.host,
      attempts: 0,
      round: 0,
      body: rendered.body,
      signature: rendered.signature,
      signatureNext: rendered.signatureNext,
      headers: rendered.headers,
      secret: event.secret,
      secretPrevious: input.nextSecret === null ? null : event.previous,
      deliveryMode: event.deliveryMode,
      batchMaxEvents: event.batchMaxEvents,
      batchMaxWaitMs: event.batchMaxWaitMs
    })
  }
  return { items, unrendered }
}

/** DeliveryClaims' fanOut (documented on its interface). */
export const makeFanOut = ({ sql }: DispatcherSql, fanouts: FanoutRows) => {
  const anchors = anchorReads(sql)
  /** A fan-out's target (events `e`, records `r`, webhook_settings `s`): the record's webhookUrl, else the global webhook. */
  const targetUrl = sql`COALESCE(NULLIF(r.webhook_url, ''), s.url)`

  const findEvents = SqlSchema.findAll({
    Request: Schema.Struct({ batchEventIds: Schema.Array(Schema.String), recordIds: Schema.Array(Schema.String), now: Schema.Date }),
    Result: FanRow,
    execute: ({ batchEventIds, now, recordIds }) =>
      sql`
        SELECT c.batch_event_id::text || ':' || c.record_id AS seq, be.id::text AS batch_event_id,
          anchord_event_id(be.id, r.id) AS event_id, 'anchor.confirmed' AS kind, NULL AS payload_text,
          be.created_at AS event_created_at, cb.anchored_at,
          be.account_id, r.id AS record_id, r.environment,
          CASE WHEN NULLIF(r.webhook_url, '') IS NOT NULL THEN 'record' ELSE 'account' END AS target,
          ${targetUrl} AS url, ${hostPortSql(sql, targetUrl)} AS host,
          s.payload_format AS format, s.secret, s.previous_secret AS previous, (${inOverlap(sql, now, "s")}) AS overlap,
          s.delivery_mode, s.batch_max_events, s.batch_max_wait_ms,
          -- the state of a record its anchor.confirmed announces (read from its anchors, not stored on the record)
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
        JSON.stringify(deliveries.map((delivery, ord) => ({
          ord,
          id: delivery.id,
          batch_event_id: delivery.batchEventId,
          event_id: delivery.eventId,
          account_id: delivery.accountId,
          record_id: delivery.recordId,
          environment: delivery.environment,
          target: delivery.target,
          url: delivery.url,
          host: delivery.host
        })))
      }::jsonb) AS v(ord int, id text, batch_event_id bigint, event_id text, account_id text, record_id text,
          environment text, target text, url text, host text)
        ORDER BY v.ord`
  })

  /**
   * A divided row's records taken that have something to send become a chunk leased to this node: the row itself
   * when none of it waits, else a row split off it (the row keeps those that wait). None when nothing of it is sent.
   */
  const leaseTaken = Effect.fnUntraced(function*(
    division: RowDivision,
    items: ReadonlyMap<string, ChunkItem>,
    lease: { readonly until: Date; readonly nodeId: string; readonly token: string }
  ) {
    const leased = division.taken.flatMap((taken) => {
      const item = items.get(`${division.batchEventId}:${taken.recordId}`)
      return item === undefined ? [] : [item]
    })
    const leasedRecords = { recordIds: leased.map((item) => item.recordId), hosts: leased.map((item) => item.host), ...lease }
    if (division.waiting.recordIds.length === 0) {
      if (leased.length === 0) {
        yield* rowDefects(fanouts.deleteFanout(division.fanoutId))
        return undefined
      }
      yield* rowDefects(fanouts.leaseFanout({ id: division.fanoutId, ...leasedRecords }))
      return { fanoutId: division.fanoutId, token: lease.token, items: leased }
    }
    if (division.waiting.recordIds.length < division.recordCount) {
      yield* rowDefects(fanouts.keepInFanout({ id: division.fanoutId, ...division.waiting }))
    }
    if (leased.length === 0) return undefined
    const split = yield* fanouts.splitFanout({ batchEventId: division.batchEventId, ...leasedRecords }).pipe(
      Effect.catchTag("NoSuchElementError", Effect.die), // an INSERT … VALUES answers its row
      rowDefects
    )
    return { fanoutId: split.id, token: lease.token, items: leased }
  })

  const fanOut: FanOutStep = Effect.fnUntraced(function*(limit, leaseMillis, nodeId, token, perHost, inFlight) {
    const ms = yield* Clock.currentTimeMillis
    const now = new Date(ms)
    const lease = { until: new Date(ms + leaseMillis), nodeId, token }
    return yield* sql.withTransaction(Effect.gen(function*() {
      const rows = yield* rowDefects(fanouts.leasableFanouts(now))
      if (rows.length === 0) return { chunks: [], found: false }
      const divisions = divideByHostCaps(rows, limit, perHost, inFlight)
      // the events taken, each keyed "<batch event id>:<record id>" (the derived event's key)
      const taken = divisions.flatMap((division) => division.taken.map(({ recordId }) => ({ batchEventId: division.batchEventId, recordId })))
      const events = taken.length === 0 ? [] : yield* rowDefects(findEvents({
        batchEventIds: taken.map((event) => event.batchEventId),
        recordIds: taken.map((event) => event.recordId),
        now
      }))
      const payloads = yield* anchors.anchorConfirmedPayloads(events.map((event) => ({ key: event.seq, ...event })))
      const { items, unrendered } = renderChunkItems(events, payloads)
      if (unrendered.length > 0) {
        yield* rowDefects(insertUnrendered({
          deliveries: unrendered.map((event) => ({ ...event, id: newDeliveryId() })),
          now
        }))
      }
      const chunks: Array<Chunk> = []
      for (const division of divisions) {
        const chunk = yield* leaseTaken(division, items, lease)
        if (chunk !== undefined) chunks.push(chunk)
      }
      // `found`: something was consumed, so more may be waiting; rows whose events all wait for
      // their receivers are not progress (the claim loop then waits for outcomes).
      return { chunks, found: taken.length > 0 }
    }))
  })

  return { fanOut }
}
