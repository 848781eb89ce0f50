/**
 * Batched deliveries (docs/webhooks.md, "Batched delivery"): several events of one kind for one receiver
 * in one request. Pure functions; the dispatcher groups, sends and maps the answer back to the events.
 *
 * The body is `{"events":[entry, …]}` in record order, each entry
 * `{"eventId","event","hash","packageMode","chain","network","attempt","payload"}`: what the event's own
 * request would have said in its headers, and `payload`, byte for byte the body it would have had alone
 * (form A or form B, stored once per event). One signature over the whole raw body in both schemes; the
 * request's id (`webhook-id`, `X-Service-Batch-Id`) is derived from its event ids, so the same events
 * sent again carry the same id.
 *
 * A 2xx answers the whole request; its body may name events the receiver could not take,
 * `{"failedEventIds":["evt_…", …]}`: only those are retried. Any other 2xx body means all were taken.
 */
import * as Crypto from "node:crypto"
import type { StableHeaders } from "./payload.ts"
import { sign } from "./payload.ts"
import { standardSignature } from "./standard.ts"

/** How an environment's deliveries go out (`webhook_settings`). */
export interface BatchSettings {
  readonly deliveryMode: "single" | "batch"
  readonly batchMaxEvents: number
  readonly batchMaxWaitMs: number
}

/** One event of a batch: its stored rendering and how many attempts it had. */
export interface BatchEvent {
  readonly body: string
  readonly headers: StableHeaders
  readonly attempts: number
}

/** The most of a 2xx answer's body read for `failedEventIds` (the rest is drained unread). */
export const ANSWER_MAX_BYTES = 256 * 1024

/** The request id of a batch of these events: `whb_` + 32 hex of their ids' SHA-256. */
export const batchId = (eventIds: ReadonlyArray<string>): string =>
  `whb_${Crypto.createHash("sha256").update(eventIds.join(","), "utf8").digest("hex").slice(0, 32)}`

/** The raw body: each event's stored body spliced in unchanged. */
export const batchBody = (events: ReadonlyArray<BatchEvent>): string => {
  const entries = events.map((e) => {
    const h = e.headers
    // JSON.stringify of the fixed members, then the stored body as `payload` (no re-serialization).
    const head = JSON.stringify({
      eventId: h.eventId,
      event: h.event,
      hash: h.hash,
      packageMode: h.packageMode,
      chain: h.chain,
      network: h.network,
      attempt: e.attempts
    })
    return `${head.slice(0, -1)},"payload":${e.body}}`
  })
  return `{"events":[${entries.join(",")}]}`
}

/** A value every event shares, or undefined. */
const shared = (events: ReadonlyArray<BatchEvent>, pick: (h: StableHeaders) => string): string | undefined => {
  const first = pick(events[0]!.headers)
  return events.every((e) => pick(e.headers) === first) ? first : undefined
}

/**
 * A batch attempt's headers at `seconds`: what every event shares (`X-Service-Event`, and chain, network,
 * package mode when all have the same), how many events, the request's id, and the signatures over the whole
 * body with the environment's secrets as of this claim (`previous` signs x-webhook-signature during a
 * rotation overlap, as for a single event).
 */
export const batchHeaders = (
  events: ReadonlyArray<BatchEvent>,
  body: string,
  secrets: { readonly secret: string; readonly previous: string | null },
  seconds: number,
  userAgent: string
): Record<string, string> => {
  const id = batchId(events.map((e) => e.headers.eventId))
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "User-Agent": userAgent,
    "X-Service-Event": events[0]!.headers.event,
    "X-Service-Event-Count": String(events.length),
    "X-Service-Batch-Id": id,
    "X-Service-Timestamp": String(seconds)
  }
  const chain = shared(events, (h) => h.chain)
  const network = shared(events, (h) => h.network)
  const packageMode = shared(events, (h) => h.packageMode)
  if (chain !== undefined) headers["X-Service-Chain"] = chain
  if (network !== undefined) headers["X-Service-Network"] = network
  if (packageMode !== undefined) headers["X-Service-Package"] = packageMode
  headers["x-webhook-signature"] = sign(secrets.previous ?? secrets.secret, body)
  if (secrets.previous !== null) headers["x-webhook-signature-next"] = sign(secrets.secret, body)
  headers["webhook-id"] = id
  headers["webhook-timestamp"] = String(seconds)
  headers["webhook-signature"] = standardSignature(secrets.previous === null ? [secrets.secret] : [secrets.previous, secrets.secret], id, seconds, body)
  return headers
}

/** The events a 2xx answer names as not taken (only ids of this request count); none for any other body. */
export const failedEventIds = (answer: string | undefined, eventIds: ReadonlyArray<string>): ReadonlySet<string> => {
  if (answer === undefined || answer.length === 0) return new Set()
  let parsed: unknown
  try {
    parsed = JSON.parse(answer)
  } catch {
    return new Set()
  }
  const named = (parsed as { failedEventIds?: unknown } | null)?.failedEventIds
  if (!Array.isArray(named)) return new Set()
  const mine = new Set(eventIds)
  return new Set(named.filter((id): id is string => typeof id === "string" && mine.has(id)))
}

/**
 * Splits items into requests in their order: those of a batching environment by `key` (receiver, secrets,
 * event kind) into groups of at most their `batchMaxEvents`; every other item alone.
 */
export const groupRequests = <T extends BatchSettings>(items: ReadonlyArray<T>, key: (item: T) => string): Array<Array<T>> => {
  const requests: Array<Array<T>> = []
  const open = new Map<string, Array<T>>()
  for (const item of items) {
    if (item.deliveryMode !== "batch") {
      requests.push([item])
      continue
    }
    const k = key(item)
    let group = open.get(k)
    if (group === undefined || group.length >= item.batchMaxEvents) {
      group = []
      open.set(k, group)
      requests.push(group)
    }
    group.push(item)
  }
  return requests
}
