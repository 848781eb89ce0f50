/**
 * A proof bundle inside a link to the public verify page (docs/console.md):
 *
 *   <public URL>/verify#bundle=<base32, RFC 4648, unpadded, of deflate-raw(JSON text of the bundle)>
 *
 * The bundle rides in the fragment, which browsers never send to the server: opening the link
 * tells the node nothing, and the page verifies the bundle against the chain by itself.
 * - deflate-raw (RFC 1951): browsers inflate it natively (DecompressionStream), and a bundle is
 *   mostly hex, which Huffman coding brings back to ~4 bits per character.
 * - base32 (A-Z, 2-7): every character is in the QR code's alphanumeric set, 5.5 bits per
 *   character there, against 8 for base64url's mixed case in byte mode: the certificate's QR code
 *   of a hybrid record in a 1000-leaf batch is version 34 instead of 37 (level M).
 * Web APIs (CompressionStream) and @scure/base only: the same module runs in Node and in the page.
 */
import { base32nopad } from "@scure/base"

/** The fragment's key: `#bundle=…`. */
export const BUNDLE_PARAM = "bundle"

/** Largest JSON text a link may inflate to: a real bundle is a few KB; a hostile link must not fill the tab's memory. */
export const MAX_BUNDLE_JSON_BYTES = 256 * 1024

export class BundleLinkError extends Error {
  override readonly name = "BundleLinkError"
}

const BASE32 = /^[A-Z2-7]*$/

const streamBytes = async (stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> => {
  const reader = stream.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel()
      throw new BundleLinkError(`the bundle in the link inflates to more than ${limit} bytes`)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let offset = 0
  for (const c of chunks) {
    out.set(c, offset)
    offset += c.byteLength
  }
  return out
}

const transform = (bytes: Uint8Array, stream: CompressionStream | DecompressionStream, limit: number) =>
  streamBytes(new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(stream), limit)

const toBase32 = (bytes: Uint8Array): string => base32nopad.encode(bytes)

const fromBase32 = (text: string): Uint8Array => {
  // Some QR readers and mail clients change case; base32 does not depend on it.
  const upper = text.toUpperCase()
  if (!BASE32.test(upper)) throw new BundleLinkError("the bundle in the link is not base32 (A-Z, 2-7)")
  try {
    return base32nopad.decode(upper)
  } catch (e) {
    throw new BundleLinkError(`the bundle in the link is not base32: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/** The fragment value (after `#bundle=`) carrying `bundle`, as compact JSON. */
export const encodeBundle = async (bundle: unknown): Promise<string> => {
  const json = new TextEncoder().encode(JSON.stringify(bundle))
  if (json.byteLength > MAX_BUNDLE_JSON_BYTES) {
    throw new BundleLinkError(`the bundle is ${json.byteLength} bytes of JSON, more than a link carries (${MAX_BUNDLE_JSON_BYTES})`)
  }
  return toBase32(await transform(json, new CompressionStream("deflate-raw"), Number.MAX_SAFE_INTEGER))
}

/** `<verifyPageUrl>#bundle=<encoded>`; any fragment of the page URL is replaced. */
export const bundleLink = async (verifyPageUrl: string, bundle: unknown): Promise<string> => {
  const base = verifyPageUrl.replace(/#.*$/, "")
  return `${base}#${BUNDLE_PARAM}=${await encodeBundle(bundle)}`
}

/**
 * The JSON text of the bundle a link's fragment carries (`#bundle=…`, with or without the `#`),
 * or undefined when the fragment carries none.
 * @throws BundleLinkError when it carries something unreadable.
 */
export const decodeBundleFragment = async (fragment: string): Promise<string | undefined> => {
  const params = new URLSearchParams(fragment.replace(/^#/, ""))
  const value = params.get(BUNDLE_PARAM)
  if (value === null) return undefined
  let json: Uint8Array
  try {
    json = await transform(fromBase32(value), new DecompressionStream("deflate-raw"), MAX_BUNDLE_JSON_BYTES)
  } catch (e) {
    if (e instanceof BundleLinkError) throw e
    throw new BundleLinkError(`the bundle in the link cannot be inflated (deflate-raw): ${e instanceof Error ? e.message : String(e)}`)
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(json)
  } catch {
    throw new BundleLinkError("the bundle in the link is not UTF-8 text")
  }
}
