/**
 * Standard Webhooks signatures (SPEC 5.3), sent beside the seed's `x-webhook-signature`, and the
 * account secrets both schemes use. Pure functions, no Effect (the SDK's verifier mirrors them).
 *
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed as the Standard Webhooks
 * libraries key it: the bytes of the base64 text after `whsec_`. Our secrets are `whsec_` + 32 bytes in
 * base64url without `-` or `_` (made by PostgreSQL's `anchord_webhook_secret()`), so standard base64 too: the key is those 32 bytes.
 */
import * as Crypto from "node:crypto"

const PREFIX = "whsec_"

/** The HMAC key of a `whsec_…` secret under Standard Webhooks (a secret without the prefix is base64 as a whole). */
export const standardKey = (secret: string): Buffer => Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64")

/**
 * The `webhook-signature` value: one `v1,<base64>` per secret, space-separated (during a rotation
 * overlap a receiver holding either secret finds its own).
 */
export const standardSignature = (secrets: ReadonlyArray<string>, id: string, timestampSeconds: number, body: string): string =>
  secrets.map((secret) => `v1,${Crypto.createHmac("sha256", standardKey(secret)).update(`${id}.${timestampSeconds}.${body}`, "utf8").digest("base64")}`).join(
    " "
  )
