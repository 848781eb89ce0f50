/**
 * What a delivery's first render reads (./DeliveryClaims.ts composes it): its event (a stored `events` row, or an
 * `anchor.confirmed` derived from a batch event and the record's anchors), the record's state, and the format and
 * secrets of the delivery's environment. The fan-out (./fanOut.ts) builds its render inputs from the same row shape.
 */
import { Effect, Schema } from "effect"
import { anchorReads } from "../anchoring/anchorViews.ts"
import { clockNow, type DispatcherSql } from "./dispatcherSql.ts"
import type { RenderInput } from "./payload.ts"
import { inOverlap } from "./rotation.ts"
import { DeliveryEventKind, PayloadFormat } from "./rows.ts"

/** A render's input with the key of what it renders (a delivery's seq, or a fan-out event's key). */
export type KeyedRenderInput = RenderInput & { readonly seq: string }

/** What a delivery's first render reads: the stored event, the record, the settings of the delivery's environment. */
export const RenderRow = Schema.Struct({
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
 * jsonb read as text and parsed here: the client's name transform would otherwise rewrite the keys of
 * the client's own metadata (my_key → myKey). PostgreSQL's own output, so plain JSON.parse.
 */
const parseJson = (text: string | null): Record<string, unknown> | null => text === null ? null : JSON.parse(text)

/**
 * The render's input from its row: the secrets by the rotation overlap, the jsonb parsed; a derived
 * anchor.confirmed's payload (and a derived prior one) built by the caller from the record's anchors.
 */
export const toRenderInput = (
  row: RenderRow,
  derived?: { readonly payload?: Record<string, unknown> | undefined; readonly prior?: Record<string, unknown> | undefined }
): KeyedRenderInput => {
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

/** DeliveryClaims' renderInputs (documented on its interface). */
export const makeRenderInputs = ({ sql }: DispatcherSql) => {
  const anchors = anchorReads(sql)
  /**
   * The one statement of the dispatcher whose rows are read as typed (`RenderInputRow`), not decoded: it runs for
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
        -- the delivery's event: a stored one (event_seq), or one derived from its batch event (batch_event_id)
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
      -- the delivery's environment's format and secrets
      JOIN webhook_settings s ON s.account_id = e.account_id AND s.environment = e.environment
      LEFT JOIN records r ON r.id = e.record_id
      -- its state, read from its anchors (src/anchoring/recordState.ts)
      LEFT JOIN LATERAL anchord_record_state(r.id, r.status, r.chain_type) st ON true
      -- The record's last anchor.confirmed before the event: a stored one (older nodes wrote one events row per
      -- record) by the events index, a derived one through the record's anchors' batches. The kind test inside:
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

  const renderInputs = Effect.fnUntraced(function*(seqs: ReadonlyArray<string>) {
    const now = yield* clockNow
    const rows = yield* findRenderInputs({ seqs, now })
    const derived = rows.filter((row) => row.batchEventId !== null || row.priorBatchEventId !== null)
    const payloads = derived.length === 0 ? new Map<string, Record<string, unknown>>() : yield* anchors.anchorConfirmedPayloads(derived.map((row) => ({
      key: row.seq,
      recordId: row.recordId ?? "",
      // the event's own anchoredAt, else the prior confirmation's
      anchoredAt: (row.batchEventId !== null ? row.anchoredAt : row.priorAnchoredAt) ?? new Date(0),
      hash: row.hash,
      chainType: row.chainType,
      networkId: row.networkId
    })))
    return rows.map((row): KeyedRenderInput =>
      toRenderInput(row, row.batchEventId !== null
        ? { payload: payloads.get(row.seq) }
        // a derived prior confirmation newer than any stored one
        : row.priorBatchEventId !== null && (row.priorId === null || BigInt(row.priorBatchEventId) > BigInt(row.priorId))
        ? { prior: payloads.get(row.seq) }
        : undefined)
    )
  })

  return { renderInputs }
}
