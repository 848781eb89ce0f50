/**
 * `verifyWebhook`: checks an anchord delivery with either signature scheme it carries (docs/webhooks.md):
 *  - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` (one or more,
 *    space-separated) = HMAC-SHA256 over "id.timestamp.body", keyed with the base64-decoded text after
 *    `whsec_`; the timestamp must be within the tolerance (replays are refused);
 *  - the seed's: `x-webhook-signature: sha256=<hex>` (and `x-webhook-signature-next` during a rotation) =
 *    HMAC-SHA256 of the raw body keyed with the whole secret string. It has no timestamp.
 * When the Standard Webhooks headers are present they decide alone (falling back to the seed's
 * signature would let a replay through). Over the raw body only; digests compared in constant time.
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

export type VerifyWebhookResult =
  | {
    readonly valid: true
    readonly scheme: "standard-webhooks" | "x-webhook-signature"
    /** `webhook-id` (= `X-Service-Event-Id`): deduplicate on it. */
    readonly eventId: string | null
    /** `webhook-timestamp` in Unix seconds (null with the seed's scheme). */
    readonly timestamp: number | null
  }
  | { readonly valid: false; readonly reason: string }

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
      if (given.some((g) => equalDigest(g, expected))) return { valid: true, scheme: "standard-webhooks", eventId: id, timestamp: seconds }
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
      return { valid: true, scheme: "x-webhook-signature", eventId: header(headers, "x-service-event-id") ?? null, timestamp: null }
    }
  }
  return { valid: false, reason: "no x-webhook-signature matches the secret" }
}
