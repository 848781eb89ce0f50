/**
 * Browser stand-in for `node:crypto` in the verify page's bundle (web/build.ts): only what
 * src/canonical/jcs.ts uses, `hash("sha256", text, "hex")`, synchronous like Node's
 * (WebCrypto's digest is asynchronous, and recordHash is not). SHA-256 from @noble/hashes.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { bytesToHex } from "@noble/hashes/utils.js"

export function hash(algorithm: string, data: string, outputEncoding: string): string {
  if (algorithm !== "sha256" || outputEncoding !== "hex" || typeof data !== "string") {
    throw new Error(`node:crypto stand-in: only hash("sha256", string, "hex") is available in the browser`)
  }
  // Node hashes a string as UTF-8; JCS has already refused lone surrogates, so no input differs.
  return bytesToHex(sha256(new TextEncoder().encode(data)))
}
