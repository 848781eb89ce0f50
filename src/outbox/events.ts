/**
 * The outbox: every state change a client hears about writes one event row in the same transaction
 * (table `events`; a trigger turns it into webhook deliveries, see src/webhooks/). This is the one
 * schema of those events: every producer encodes through it (`Outbox.append`) and the webhook
 * renderer decodes through it, so neither guesses at the other's JSON.
 *
 * Stored as `kind` (column) + payload (jsonb, the event without `kind`).
 */
import { Schema, SchemaTransformation } from "effect"
import { Anchor, AnchorChainType, ChainType, Environment, RecordStatus } from "../api/recordSchemas.ts"

const AnchorConfirmedFacts = Schema.Struct({
  kind: Schema.Literal("anchor.confirmed"),
  recordId: Schema.String,
  hash: Schema.String,
  /** The record's chain type (hybrid records have two anchors). */
  recordChainType: ChainType,
  /** The record's primary network: its anchor is the top level of the webhook's form B. */
  networkId: Schema.String,
  /** When the record became ANCHORED. */
  anchoredAt: Schema.String,
  anchors: Schema.Array(Anchor)
})

/** The record's primary anchor (on its `networkId`) and, for a hybrid record, the other one (form B's `dualAnchor`). */
export const primaryAnchor = (e: { readonly networkId: string; readonly anchors: ReadonlyArray<Anchor> }) => e.anchors.find((a) => a.networkId === e.networkId)
export const dualAnchor = (e: {
  readonly recordChainType: ChainType
  readonly networkId: string
  readonly anchors: ReadonlyArray<Anchor>
}) => e.recordChainType === "hybrid" ? e.anchors.find((a) => a.networkId !== e.networkId) : undefined
type Anchor = typeof Anchor.Type

/**
 * The stored payload of `anchor.confirmed`, as the node has always written it (rows written before
 * this schema decode the same): the facts above, plus members derived from them on encode and ignored
 * on decode — `status`, the primary anchor's members at the top level (the record's `anchoredAt` and
 * `networkId` win) and, for a hybrid record, `dualAnchor`. Readers of the database (operators' SQL,
 * tests) see the record's anchor without unpacking `anchors`.
 */
const StoredAnchorConfirmed = Schema.Struct({
  ...AnchorConfirmedFacts.fields,
  status: Schema.optionalKey(Schema.Literal("ANCHORED")),
  /** The primary anchor's chain; the record's chain type when it has no anchor on its network. */
  chainType: Schema.optionalKey(ChainType),
  batchId: Schema.optionalKey(Anchor.fields.batchId),
  txHash: Schema.optionalKey(Anchor.fields.txHash),
  blockNumber: Schema.optionalKey(Anchor.fields.blockNumber),
  merkleRoot: Schema.optionalKey(Anchor.fields.merkleRoot),
  merkleProof: Schema.optionalKey(Anchor.fields.merkleProof),
  contractAddress: Anchor.fields.contractAddress,
  chainId: Anchor.fields.chainId,
  channel: Anchor.fields.channel,
  chaincode: Anchor.fields.chaincode,
  dualAnchor: Schema.optionalKey(Anchor)
})

/** A record reached ANCHORED: every anchor it has (a hybrid record: EVM and Fabric), confirmed. */
export const AnchorConfirmed = StoredAnchorConfirmed.pipe(Schema.decodeTo(
  AnchorConfirmedFacts,
  SchemaTransformation.transform({
    decode: (stored) => stored,
    encode: (facts) => {
      const primary = primaryAnchor(facts)
      const dual = dualAnchor(facts)
      return {
        ...(primary ?? { chainType: facts.recordChainType }),
        ...facts,
        status: "ANCHORED" as const,
        ...(dual === undefined ? {} : { dualAnchor: dual })
      }
    }
  })
))
export type AnchorConfirmed = typeof AnchorConfirmed.Type

const AnchorFailedFacts = Schema.Struct({
  kind: Schema.Literal("anchor.failed"),
  recordId: Schema.String,
  hash: Schema.String,
  networkId: Schema.String,
  chainType: AnchorChainType,
  reason: Schema.String,
  errorCode: Schema.Literal("ANCHOR_FAILED")
})

/** A batch was given up: its records reached FAILED. Stored with `status` and no transaction (derived, as always). */
export const AnchorFailed = Schema.Struct({
  ...AnchorFailedFacts.fields,
  status: Schema.optionalKey(Schema.Literal("FAILED")),
  txHash: Schema.optionalKey(Schema.Null),
  blockNumber: Schema.optionalKey(Schema.Null)
}).pipe(Schema.decodeTo(
  AnchorFailedFacts,
  SchemaTransformation.transform({
    decode: (stored) => stored,
    encode: (facts) => ({ ...facts, status: "FAILED" as const, txHash: null, blockNumber: null })
  })
))
export type AnchorFailed = typeof AnchorFailed.Type

/**
 * Changed metadata as an event stores it: its JSON text, because `events.payload` is jsonb, which
 * reorders an object's members, and receivers get `changes.metadata` in the client's order.
 * Events stored before as an object still decode.
 */
const StoredMetadata = Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)]).pipe(Schema.decodeTo(
  Schema.Record(Schema.String, Schema.Unknown),
  SchemaTransformation.transform({
    decode: (stored): Record<string, unknown> => typeof stored === "string" ? JSON.parse(stored) : stored,
    encode: (metadata) => JSON.stringify(metadata)
  })
))

/** The owner changed mutable fields (only those that changed are listed). */
export const RecordUpdated = Schema.Struct({
  kind: Schema.Literal("record.updated"),
  recordId: Schema.String,
  hash: Schema.String,
  status: RecordStatus,
  changes: Schema.Struct({
    metadata: Schema.optionalKey(StoredMetadata),
    webhookUrl: Schema.optionalKey(Schema.NullOr(Schema.String))
  })
})
export type RecordUpdated = typeof RecordUpdated.Type

/** The owner deleted the record (soft: hidden; hard: data erased, tombstone kept). */
export const RecordDeleted = Schema.Struct({
  kind: Schema.Literal("record.deleted"),
  recordId: Schema.String,
  hash: Schema.String,
  status: RecordStatus,
  mode: Schema.Literals(["soft", "hard"])
})
export type RecordDeleted = typeof RecordDeleted.Type

/**
 * A test event (the console's "send test event"): delivered to the account's webhook URL whatever its
 * subscriptions and `enabled`, signed and retried like any event. It belongs to no record: `recordId`
 * and `hash` are "" (the columns are NOT NULL), and receivers get nulls there.
 */
export const WebhookTest = Schema.Struct({
  kind: Schema.Literal("webhook.test"),
  recordId: Schema.Literal(""),
  hash: Schema.Literal(""),
  /** The environment whose delivery log shows it. */
  environment: Environment
})
export type WebhookTest = typeof WebhookTest.Type

export const OutboxEvent = Schema.Union([AnchorConfirmed, AnchorFailed, RecordUpdated, RecordDeleted, WebhookTest])
export type OutboxEvent = typeof OutboxEvent.Type
