/**
 * `verifyWebhook`: checks an anchord delivery with either signature scheme it carries (docs/webhooks.md):
 *  - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` (one or more,
 *    space-separated) = HMAC-SHA256 over "id.timestamp.body", keyed with the base64-decoded text after
 *    `whsec_`; the timestamp must be within the tolerance (replays are refused);
 *  - the seed's: `x-webhook-signature: sha256=<hex>` (and `x-webhook-signature-next` during a rotation) =
 *    HMAC-SHA256 of the raw body keyed with the whole secret string. It has no timestamp.
 * When the Standard Webhooks headers are present they decide alone (falling back to the seed's
 * signature would let a replay through). Over the raw body only; digests compared in constant time.
 * A batched request (`X-Service-Batch-Id`, docs/webhooks.md "Batched delivery") is signed as a whole; its
 * events come back in `events`, each with its own id.
 */
import { Buffer } from "node:buffer"
import { createHmac, timingSafeEqual } from "node:crypto"

export type WebhookHeaders =
  | { readonly get: (name: string) => string | null }
  | { readonly [name: string]: string | ReadonlyArray<string> | undefined }

export interface VerifyWebhookInput {
  /** The request body exactly as received (a string or its bytes), never a parsed object. */
  readonly rawBody: string | Uint8Array
  /** The request's headers: a fetch `Headers`, or Node's `req.headers` (any case). */
  readonly headers: WebhookHeaders
  /** The account's webhook secret (`whsec_…`); during a rotation, both. */
  readonly secret: string | ReadonlyArray<string>
  /** Largest accepted distance between `webhook-timestamp` and now (default 300 s, as the Standard Webhooks libraries). */
  readonly toleranceSeconds?: number
  /** Refuse deliveries without the Standard Webhooks headers (the seed's signature alone cannot show freshness). */
  readonly requireTimestamp?: boolean
}

/** One event of a verified delivery: its id (deduplicate on it), its kind (`ANCHORED`, …) and its body, parsed. */
export interface WebhookEvent {
  readonly eventId: string | null
  readonly event: string | null
  readonly payload: unknown
}

export type VerifyWebhookResult =
  | {
    readonly valid: true
    readonly scheme: "standard-webhooks" | "x-webhook-signature"
    /** One event per request: `webhook-id` (= `X-Service-Event-Id`); a batch: null (each event has its own). */
    readonly eventId: string | null
    /** A batched request's id (`X-Service-Batch-Id` = its `webhook-id`); null for one event per request. */
    readonly batchId: string | null
    /** `webhook-timestamp` in Unix seconds (null with the seed's scheme). */
    readonly timestamp: number | null
    /** The request's events: one, or a batch's in order (empty if the body is not JSON). */
    readonly events: ReadonlyArray<WebhookEvent>
  }
  | { readonly valid: false; readonly reason: string }

/** The events of a verified body: a batch's entries (`X-Service-Batch-Id` set), else the one event of the request. */
const eventsOf = (headers: WebhookHeaders, body: Uint8Array,
  eventId: string | null): Pick<VerifyWebhookResult & { valid: true }, "batchId" | "eventId" | "events"> =>
{
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(body).toString("utf8"))
  } catch {
    parsed = undefined
  }
  const batchId = header(headers, "x-service-batch-id") ?? null
  if (batchId !== null) {
    const entries = (parsed as { events?: unknown } | undefined)?.events
    const events = Array.isArray(entries)
      ? entries.map((e: { eventId?: unknown; event?: unknown; payload?: unknown }) => ({
        eventId: typeof e.eventId === "string" ? e.eventId : null,
        event: typeof e.event === "string" ? e.event : null,
        payload: e.payload
      }))
      : []
    return { batchId, eventId: null, events }
  }
  return { batchId: null, eventId, events: parsed === undefined ? [] : [{ eventId, event: header(headers, "x-service-event") ?? null, payload: parsed }] }
}

const header = (headers: WebhookHeaders, name: string): string | undefined => {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get: (n: string) => string | null }).get(name) ?? undefined
  }
  const record = headers as { readonly [name: string]: string | ReadonlyArray<string> | undefined }
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() !== name) continue
    const value = record[key]
    return typeof value === "string" ? value : value?.join(" ")
  }
  return undefined
}

/** Standard Webhooks key bytes of a secret (Node's base64 decoder reads base64 and base64url alike). */
const standardKey = (secret: string) => Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64")

const equalDigest = (given: Buffer, expected: Buffer) => given.length === expected.length && timingSafeEqual(given, expected)

export const verifyWebhook = (input: VerifyWebhookInput): VerifyWebhookResult => {
  const { rawBody, headers } = input
  if (typeof rawBody !== "string" && !(rawBody instanceof Uint8Array)) {
    throw new TypeError("verifyWebhook: rawBody must be the raw request body (string or bytes), not parsed JSON")
  }
  const secrets = (typeof input.secret === "string" ? [input.secret] : [...input.secret]).filter((s) => typeof s === "string" && s !== "")
  if (secrets.length === 0) throw new TypeError("verifyWebhook: a secret is required")
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody

  const id = header(headers, "webhook-id")
  const timestamp = header(headers, "webhook-timestamp")
  const signature = header(headers, "webhook-signature")
  if (id !== undefined || timestamp !== undefined || signature !== undefined) {
    if (id === undefined || timestamp === undefined || signature === undefined) {
      return { valid: false, reason: "incomplete Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature)" }
    }
    if (!/^\d{1,15}$/.test(timestamp.trim())) return { valid: false, reason: "webhook-timestamp is not Unix seconds" }
    const seconds = Number(timestamp.trim())
    const tolerance = input.toleranceSeconds ?? 300
    if (Math.abs(Date.now() / 1000 - seconds) > tolerance) {
      return { valid: false, reason: `webhook-timestamp is more than ${tolerance} s from now (a replay, or a clock off)` }
    }
    const given = signature.split(" ").flatMap((entry) => {
      const [version, value] = entry.split(",", 2)
      return version === "v1" && value !== undefined ? [Buffer.from(value, "base64")] : []
    })
    for (const secret of secrets) {
      const expected = createHmac("sha256", standardKey(secret)).update(`${id}.${timestamp.trim()}.`, "utf8").update(body).digest()
      if (given.some((g) => equalDigest(g, expected))) {
        return { valid: true, scheme: "standard-webhooks", timestamp: seconds, ...eventsOf(headers, body, header(headers, "x-service-event-id") ?? id) }
      }
    }
    return { valid: false, reason: "no webhook-signature matches the secret" }
  }

  if (input.requireTimestamp) return { valid: false, reason: "no Standard Webhooks headers (webhook-timestamp is required)" }
  const seed = [header(headers, "x-webhook-signature"), header(headers, "x-webhook-signature-next")]
    .flatMap((h) => h !== undefined && /^sha256=[0-9a-fA-F]{64}$/.test(h.trim()) ? [Buffer.from(h.trim().slice(7), "hex")] : [])
  if (seed.length === 0) return { valid: false, reason: "no signature header (webhook-signature or x-webhook-signature)" }
  for (const secret of secrets) {
    const expected = createHmac("sha256", secret).update(body).digest()
    if (seed.some((g) => equalDigest(g, expected))) {
      return { valid: true, scheme: "x-webhook-signature", timestamp: null, ...eventsOf(headers, body, header(headers, "x-service-event-id") ?? null) }
    }
  }
  return { valid: false, reason: "no x-webhook-signature matches the secret" }
}
