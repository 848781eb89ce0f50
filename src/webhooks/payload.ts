/**
 * Webhook bodies and signatures (SPEC 5.2 – 5.4), pure functions over the outbox's events.
 *
 * The stored event (kind + payload) is decoded with the outbox's one schema (src/outbox/events.ts,
 * `decode` of src/outbox/Outbox.ts), the schema every producer writes through: the renderer reads the
 * typed event and guesses at nothing. A row that does not decode was written by no producer; `render`
 * throws `UndecodableEvent` for it and the dispatcher records a failed attempt (never a send).
 *
 * Form B (multi-chain) for `anchor.confirmed` with payloadFormat `multichain`; form A (event
 * envelope) for everything else. The body is the compact `JSON.stringify` serialization, signed
 * once per event: `sha256=` + lowercase hex HMAC-SHA-256 of the exact body bytes.
 */
import * as Crypto from "node:crypto"
import { Schema } from "effect"
import type { PayloadFormat } from "../api/webhookSchemas.ts"
import type { AnchorConfirmed, OutboxEvent } from "../outbox/events.ts"
import { decode } from "../outbox/Outbox.ts"

type EventKind = OutboxEvent["kind"]

/** `X-Service-Event` per kind (SPEC 5.1; `TEST` for the console's test event). */
export const SERVICE_EVENT: Record<EventKind, string> = {
  "anchor.confirmed": "ANCHORED",
  "anchor.failed": "FAILED",
  "record.updated": "UPDATED",
  "record.deleted": "DELETED",
  "webhook.test": "TEST"
}

/** The kind whose `X-Service-Event` this is. */
export const kindOfServiceEvent = (serviceEvent: string): EventKind | undefined =>
  (Object.keys(SERVICE_EVENT) as Array<EventKind>).find((kind) => SERVICE_EVENT[kind] === serviceEvent)

/** What a test event's receiver reads in `data.message`. */
export const TEST_EVENT_MESSAGE = "A test event sent from the anchord console: this endpoint received it."

export const sign = (secret: string, body: string): string => `sha256=${Crypto.createHmac("sha256", secret).update(body, "utf8").digest("hex")}`

/** Everything a delivery's body and headers are made of, read once when it is first claimed. */
export interface RenderInput {
  readonly eventId: string
  readonly kind: EventKind
  /** The outbox payload as stored with the state change (the event without its `kind`), decoded here. */
  readonly payload: Record<string, unknown>
  readonly eventCreatedAt: Date
  readonly format: typeof PayloadFormat.Type
  /** Signs x-webhook-signature (and form A's inner signature). */
  readonly signingSecret: string
  /** During a rotation overlap: signs x-webhook-signature-next. */
  readonly nextSecret: string | null
  /** The record (null fields when it no longer exists: should not happen, records are never removed). */
  readonly record: {
    readonly hash: string | null
    readonly packageMode: string | null
    readonly chainType: string | null
    readonly networkId: string | null
    readonly metadata: Record<string, unknown> | null
    readonly status: string | null
    /** Immutable, so the record's value is the one it had when the event happened (docs/api.md). */
    readonly collection?: string | null | undefined
  }
  /** For record.updated / record.deleted: the payload of the record's latest anchor.confirmed before this event. */
  readonly anchorPayload: Record<string, unknown> | null
}

/** Headers that do not change between attempts (stored with the body). */
export const StableHeaders = Schema.Struct({
  event: Schema.String,
  eventId: Schema.String,
  hash: Schema.String,
  packageMode: Schema.String,
  chain: Schema.String,
  network: Schema.String
})
export type StableHeaders = typeof StableHeaders.Type

export interface Rendered {
  readonly body: string
  readonly signature: string
  readonly signatureNext: string | null
  readonly headers: StableHeaders
}

/** A stored event that the outbox schema does not accept (no producer writes such a row). */
export class UndecodableEvent extends Error {
  readonly eventId: string
  readonly kind: string
  constructor(eventId: string, kind: string, cause: unknown) {
    // The schema's first complaint only: enough to find the producer, short enough for the delivery log.
    const detail = String(cause instanceof Error ? cause.message : cause).split("\n").slice(0, 2).join(" ")
    super(`event ${eventId} (${kind}) does not match the outbox schema: ${detail}`.slice(0, 500))
    this.name = "UndecodableEvent"
    this.eventId = eventId
    this.kind = kind
  }
}

const decodeStored = (eventId: string, kind: string, payload: Record<string, unknown>): OutboxEvent => {
  try {
    return decode(kind, payload)
  } catch (cause) {
    throw new UndecodableEvent(eventId, kind, cause)
  }
}

type Anchor = AnchorConfirmed["anchors"][number]

/** The record's primary anchor (its `networkId`: the EVM one of a hybrid record), and a hybrid record's other one. */
const anchorsOf = (event: AnchorConfirmed) => {
  const primary = event.anchors.find((a) => a.networkId === event.networkId)
  const secondary = event.anchors.find((a) => a.networkId !== event.networkId)
  return { primary, secondary }
}

/** `batchId`: an integer on EVM (the contract's counter), a string on Fabric (seed). */
const batchIdOf = (a: Anchor): number | string => a.chainType === "fabric" ? String(a.batchId) : a.batchId

/** `blockNumber`: always null for Fabric (seed). */
const blockNumberOf = (a: Anchor | undefined): number | null => a === undefined || a.chainType === "fabric" ? null : a.blockNumber

/** Form B, exactly the seed's table and order. */
const formB = (event: AnchorConfirmed, input: RenderInput) => {
  const { primary, secondary } = anchorsOf(event)
  const body: Record<string, unknown> = {
    type: SERVICE_EVENT[event.kind],
    hash: event.hash,
    recordId: event.recordId,
    chainType: primary?.chainType ?? recordChainOf(input) ?? "evm",
    networkId: event.networkId,
    blockNumber: blockNumberOf(primary),
    transactionHash: primary?.txHash ?? "",
    batchId: primary === undefined ? null : batchIdOf(primary),
    anchoredAt: primary?.anchoredAt ?? event.anchoredAt,
    merkleProof: primary?.merkleProof ?? [],
    metadata: input.record.metadata ?? {}
  }
  // Additive, only for records submitted with a collection: form B of every other record stays the seed's table.
  if (typeof input.record.collection === "string") body.collection = input.record.collection
  if (secondary !== undefined) {
    body.dualAnchor = {
      chainType: secondary.chainType,
      networkId: secondary.networkId,
      batchId: batchIdOf(secondary),
      blockNumber: blockNumberOf(secondary),
      transactionHash: secondary.txHash,
      merkleProof: secondary.merkleProof,
      anchoredAt: secondary.anchoredAt ?? ""
    }
  }
  return body
}

/** Form A's `data`: the five common members plus the kind's own (SPEC 5.2). */
const envelopeData = (event: OutboxEvent, prior: AnchorConfirmed | null, collection: string | null | undefined) =>
  typeof collection === "string" ? { ...envelopeMembers(event, prior), collection } : envelopeMembers(event, prior)

const envelopeMembers = (event: OutboxEvent, prior: AnchorConfirmed | null) => {
  // The anchor the event reports: its own (anchor.confirmed), the last one confirmed before it
  // (record.updated / record.deleted of an anchored record), none for anchor.failed.
  const anchored = event.kind === "anchor.confirmed" ? event : event.kind === "anchor.failed" ? null : prior
  const primary = anchored === null ? undefined : anchorsOf(anchored).primary
  if (event.kind === "webhook.test") {
    return { recordId: null, hash: null, txHash: null, blockNumber: null, status: "TEST", environment: event.environment, message: TEST_EVENT_MESSAGE }
  }
  const common = {
    recordId: event.recordId,
    hash: event.hash,
    txHash: primary?.txHash ?? null,
    blockNumber: blockNumberOf(primary)
  }
  switch (event.kind) {
    case "anchor.confirmed":
      return { ...common, status: "ANCHORED" }
    case "anchor.failed":
      return { ...common, status: "FAILED", reason: event.reason, errorCode: event.errorCode }
    case "record.updated":
      return { ...common, status: event.status, changes: event.changes }
    case "record.deleted":
      return { ...common, status: "DELETED", mode: event.mode }
  }
}

/**
 * Additive, only for the record of an RFC 3161 token (src/tsa/, its metadata names the serial): the
 * token's `timestampSerial` in anchor.confirmed, so a receiver knows which token is now anchored.
 */
const withSerial = <D extends object>(event: OutboxEvent, data: D, input: RenderInput): D => {
  const serial = input.record.metadata?.timestampSerial
  return event.kind === "anchor.confirmed" && typeof serial === "string" ? { ...data, timestampSerial: serial } : data
}

/** The record's chain for the headers: a hybrid record's primary anchor is its EVM one. */
const recordChainOf = (input: RenderInput) => input.record.chainType === "hybrid" ? "evm" : input.record.chainType

/** The chain and network an event is about (`X-Service-Chain`, `X-Service-Network`). */
const targetOf = (event: OutboxEvent, input: RenderInput) => {
  switch (event.kind) {
    case "anchor.confirmed":
      return { chain: anchorsOf(event).primary?.chainType ?? recordChainOf(input) ?? "", network: event.networkId }
    case "anchor.failed":
      return { chain: event.chainType, network: event.networkId }
    default:
      return { chain: recordChainOf(input) ?? "", network: input.record.networkId ?? "" }
  }
}

export const usesFormB = (kind: EventKind, format: typeof PayloadFormat.Type) => kind === "anchor.confirmed" && format === "multichain"

/** The delivery's body, signatures and stable headers; throws `UndecodableEvent` for a row no producer wrote. */
export const render = (input: RenderInput): Rendered => {
  const event = decodeStored(input.eventId, input.kind, input.payload)
  const prior = input.anchorPayload === null || event.kind === "anchor.confirmed" || event.kind === "anchor.failed"
    ? null
    : decodeStored(input.eventId, "anchor.confirmed", input.anchorPayload) as AnchorConfirmed
  let body: string
  if (event.kind === "anchor.confirmed" && usesFormB(event.kind, input.format)) {
    body = JSON.stringify(formB(event, input))
  } else {
    const unsigned = { event: event.kind, timestamp: input.eventCreatedAt.toISOString(),
      data: withSerial(event, envelopeData(event, prior, input.record.collection), input) }
    // SPEC 5.4: the inner `signature` is the same construction over the payload without that member.
    body = JSON.stringify({ ...unsigned, signature: sign(input.signingSecret, JSON.stringify(unsigned)) })
  }
  const { chain, network } = targetOf(event, input)
  return {
    body,
    signature: sign(input.signingSecret, body),
    signatureNext: input.nextSecret === null ? null : sign(input.nextSecret, body),
    headers: {
      event: SERVICE_EVENT[event.kind],
      eventId: input.eventId,
      hash: event.hash,
      packageMode: input.record.packageMode ?? "",
      chain,
      network
    }
  }
}
