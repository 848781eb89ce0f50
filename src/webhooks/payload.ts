/**
 * Webhook bodies and signatures (SPEC 5.2 – 5.4), pure functions.
 *
 * Form B (multi-chain) for `anchor.confirmed` with payloadFormat `multichain`; form A (event
 * envelope) for everything else. The body is the compact `JSON.stringify` serialization, signed
 * once per event: `sha256=` + lowercase hex HMAC-SHA-256 of the exact body bytes.
 */
import * as Crypto from "node:crypto"

export type EventKind = "anchor.confirmed" | "anchor.failed" | "record.updated" | "record.deleted"
export const EVENT_KINDS: ReadonlyArray<EventKind> = ["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"]

/** `X-Service-Event` per kind (SPEC 5.1). */
export const SERVICE_EVENT: Record<EventKind, string> = {
  "anchor.confirmed": "ANCHORED",
  "anchor.failed": "FAILED",
  "record.updated": "UPDATED",
  "record.deleted": "DELETED"
}

export const sign = (secret: string, body: string): string =>
  `sha256=${Crypto.createHmac("sha256", secret).update(body, "utf8").digest("hex")}`

/** Everything a delivery's body and headers are made of, read once when it is first claimed. */
export interface RenderInput {
  readonly eventId: string
  readonly kind: EventKind
  /** The outbox payload written with the state change. */
  readonly payload: Record<string, unknown>
  readonly eventCreatedAt: Date
  readonly format: "multichain" | "envelope"
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
  }
  /** For record.updated / record.deleted: the record's latest anchor.confirmed payload before this event. */
  readonly anchorPayload: Record<string, unknown> | null
}

/** Headers that do not change between attempts (stored with the body). */
export interface StableHeaders {
  readonly event: string
  readonly eventId: string
  readonly hash: string
  readonly packageMode: string
  readonly chain: string
  readonly network: string
}

export interface Rendered {
  readonly body: string
  readonly signature: string
  readonly signatureNext: string | null
  readonly headers: StableHeaders
}

const str = (v: unknown): string | null => typeof v === "string" ? v : null
const int = (v: unknown): number | null =>
  typeof v === "number" && Number.isFinite(v) ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : null
const strings = (v: unknown): Array<string> => Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []
const txHashOf = (p: Record<string, unknown> | null): string | null =>
  p === null ? null : str(p.txHash) ?? str(p.transactionHash)

/** `batchId`: an integer on EVM (the contract's counter), a string on Fabric (seed). */
const batchIdOf = (chainType: string, v: unknown): number | string | null => {
  if (v === null || v === undefined) return null
  if (chainType === "fabric") return String(v)
  return int(v) ?? (typeof v === "string" ? v : null)
}

/** One anchor in form B's shape (the top level of the primary, or `dualAnchor` for the secondary). */
const anchorFields = (a: Record<string, unknown>) => {
  const chainType = str(a.chainType) ?? "evm"
  return {
    chainType,
    networkId: str(a.networkId) ?? "",
    // Always null for Fabric records (seed).
    blockNumber: chainType === "fabric" ? null : int(a.blockNumber),
    transactionHash: txHashOf(a) ?? "",
    batchId: batchIdOf(chainType, a.batchId),
    anchoredAt: str(a.anchoredAt) ?? "",
    merkleProof: strings(a.merkleProof)
  }
}

/** The secondary anchor of a hybrid record, if the producer put one in the event. */
const secondaryOf = (payload: Record<string, unknown>): Record<string, unknown> | null => {
  const dual = payload.dualAnchor
  if (typeof dual === "object" && dual !== null && !Array.isArray(dual)) return dual as Record<string, unknown>
  if (Array.isArray(payload.anchors) && payload.anchors.length > 1) {
    const primaryNetwork = str(payload.networkId)
    const other = payload.anchors.find((x) =>
      typeof x === "object" && x !== null && (x as Record<string, unknown>).networkId !== primaryNetwork)
    if (other !== undefined) return other as Record<string, unknown>
  }
  return null
}

/** Form B, exactly the seed's table and order. */
const formB = (input: RenderInput) => {
  const p = input.payload
  const primary = anchorFields(p)
  const body: Record<string, unknown> = {
    type: SERVICE_EVENT[input.kind],
    hash: str(p.hash) ?? input.record.hash ?? "",
    recordId: str(p.recordId) ?? "",
    chainType: primary.chainType,
    networkId: primary.networkId,
    blockNumber: primary.blockNumber,
    transactionHash: primary.transactionHash,
    batchId: primary.batchId,
    anchoredAt: primary.anchoredAt,
    merkleProof: primary.merkleProof,
    metadata: input.record.metadata ?? {}
  }
  const secondary = secondaryOf(p)
  if (secondary !== null) {
    const s = anchorFields(secondary)
    body.dualAnchor = {
      chainType: s.chainType,
      networkId: s.networkId,
      batchId: s.batchId,
      blockNumber: s.blockNumber,
      transactionHash: s.transactionHash,
      merkleProof: s.merkleProof,
      anchoredAt: s.anchoredAt
    }
  }
  return body
}

/** Form A's `data`: the five common members plus the kind's own (SPEC 5.2). */
const envelopeData = (input: RenderInput) => {
  const p = input.payload
  const anchored = input.kind === "anchor.confirmed" ? p : input.anchorPayload
  const data: Record<string, unknown> = {
    recordId: str(p.recordId) ?? "",
    hash: str(p.hash) ?? input.record.hash ?? "",
    txHash: txHashOf(anchored),
    blockNumber: anchored === null || str(anchored.chainType) === "fabric" ? null : int(anchored.blockNumber),
    status: input.kind === "anchor.confirmed"
      ? "ANCHORED"
      : input.kind === "anchor.failed"
      ? "FAILED"
      : input.kind === "record.deleted"
      ? "DELETED"
      : str(p.status) ?? input.record.status ?? ""
  }
  switch (input.kind) {
    case "anchor.failed":
      data.reason = str(p.reason) ?? "anchoring failed"
      data.errorCode = str(p.errorCode) ?? "ANCHOR_FAILED"
      break
    case "record.updated":
      data.changes = typeof p.changes === "object" && p.changes !== null ? p.changes : {}
      break
    case "record.deleted":
      data.mode = str(p.mode) ?? "soft"
      break
  }
  return data
}

export const usesFormB = (kind: EventKind, format: "multichain" | "envelope") =>
  kind === "anchor.confirmed" && format === "multichain"

export const render = (input: RenderInput): Rendered => {
  let body: string
  if (usesFormB(input.kind, input.format)) {
    body = JSON.stringify(formB(input))
  } else {
    const unsigned = { event: input.kind, timestamp: input.eventCreatedAt.toISOString(), data: envelopeData(input) }
    // SPEC 5.4: the inner `signature` is the same construction over the payload without that member.
    body = JSON.stringify({ ...unsigned, signature: sign(input.signingSecret, JSON.stringify(unsigned)) })
  }
  const p = input.payload
  const recordChain = input.record.chainType === "hybrid" ? "evm" : input.record.chainType
  return {
    body,
    signature: sign(input.signingSecret, body),
    signatureNext: input.nextSecret === null ? null : sign(input.nextSecret, body),
    headers: {
      event: SERVICE_EVENT[input.kind],
      eventId: input.eventId,
      hash: str(p.hash) ?? input.record.hash ?? "",
      packageMode: input.record.packageMode ?? "",
      chain: str(p.chainType) ?? recordChain ?? "",
      network: str(p.networkId) ?? input.record.networkId ?? ""
    }
  }
}
