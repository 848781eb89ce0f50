/**
 * Standard Webhooks signatures (SPEC 5.3), sent beside the seed's `x-webhook-signature`, and the
 * account secrets both schemes use. Pure functions, no Effect (the SDK's verifier mirrors them).
 *
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed as the Standard Webhooks
 * libraries key it: the bytes of the base64 text after `whsec_`. Our secrets are `whsec_` + 32 random
 * bytes in base64url; Node's base64 decoder reads both alphabets, so the key is those 32 bytes.
 */
import * as Crypto from "node:crypto"

const PREFIX = "whsec_"

/** The HMAC key of a `whsec_…` secret under Standard Webhooks (a secret without the prefix is base64 as a whole). */
export const standardKey = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64")

/**
 * The `webhook-signature` value: one `v1,<base64>` per secret, space-separated (during a rotation
 * overlap a receiver holding either secret finds its own).
 */
export const standardSignature = (secrets: ReadonlyArray<string>, id: string, timestampSeconds: number, body: string): string =>
  secrets.map((secret) =>
    `v1,${Crypto.createHmac("sha256", standardKey(secret)).update(`${id}.${timestampSeconds}.${body}`, "utf8").digest("base64")}`
  ).join(" ")

/**
 * A new account webhook secret: `whsec_` + 32 random bytes in base64url (SPEC 5.5), drawn again until
 * the text has no `-` or `_`. Such a text is standard base64 as well, which the Standard Webhooks
 * libraries require (the npm `standardwebhooks` throws on `-`/`_`, Python's silently drops them): the
 * secret works there exactly as shown. About 4 draws on average; ~254 bits of entropy remain.
 */
export const newWebhookSecret = (): string => {
  for (;;) {
    const text = Crypto.randomBytes(32).toString("base64url")
    if (!text.includes("-") && !text.includes("_")) return `${PREFIX}${text}`
  }
}
