/**
 * Browser stand-in for `node:crypto` in the verify page's bundle (web/build.ts): only what the bundled
 * core uses, `hash("sha256", …)`, synchronous like Node's (WebCrypto's digest is asynchronous, and
 * recordHash is not): a string to hex (src/canonical/jcs.ts), bytes to bytes (src/tlog/hash.ts,
 * the COSE receipts' tree). SHA-256 from @noble/hashes.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { bytesToHex } from "@noble/hashes/utils.js"

export function hash(algorithm: string, data: string, outputEncoding: "hex"): string
export function hash(algorithm: string, data: Uint8Array, outputEncoding: "buffer"): Uint8Array
export function hash(algorithm: string, data: string | Uint8Array, outputEncoding: string): string | Uint8Array {
  if (algorithm === "sha256" && outputEncoding === "hex" && typeof data === "string") {
    // Node hashes a string as UTF-8; JCS has already refused lone surrogates, so no input differs.
    return bytesToHex(sha256(new TextEncoder().encode(data)))
  }
  if (algorithm === "sha256" && outputEncoding === "buffer" && data instanceof Uint8Array) return sha256(data)
  throw new Error(`node:crypto stand-in: only hash("sha256", string, "hex") and hash("sha256", bytes, "buffer") are available in the browser`)
}
