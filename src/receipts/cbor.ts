/**
 * The CBOR (RFC 8949) of COSE receipts, through cbor2 (a kept package, as the stack asks). This module
 * only fixes the options, so every caller encodes and decodes alike:
 * - encoding is core deterministic (§4.2.1, cbor2's `cde`: shortest arguments, map keys sorted by their
 *   encoded bytes), so the protected header and the Sig_structure are byte-exact;
 * - decoding refuses what a receipt never holds (indefinite lengths, floats, undefined, other simple
 *   values, duplicate map keys, trailing bytes, deep nesting) with a CborError, and gives maps as Maps
 *   whatever their keys, integers as numbers when safe (bigints otherwise).
 * Pure: the verify page bundles it.
 */
import { decode as cborDecode, type DecodeOptions, encode as cborEncode, type EncodeOptions, Tag } from "cbor2"

export { Tag }

export type CborValue =
  | number
  | bigint
  | string
  | boolean
  | null
  | Uint8Array
  | Tag
  | ReadonlyArray<CborValue>
  | ReadonlyMap<CborValue, CborValue>

export class CborError extends Error {
  override readonly name = "CborError"
}

const encodeOptions: EncodeOptions = {
  cde: true,
  // A receipt holds integers, never floats: refuse one rather than sign it.
  rejectFloats: true,
  rejectUndefined: true,
  // Numbers past 2^53 would be bigints: no silent bignum tags (tags 2/3) in what is signed.
  collapseBigInts: true
}

const decodeOptions: DecodeOptions = {
  rejectStreaming: true,
  rejectFloats: true,
  rejectUndefined: true,
  rejectSimple: true,
  rejectDuplicateKeys: true,
  preferMap: true,
  maxDepth: 16,
  // Our own tags stay as Tag objects (COSE_Sign1 = 18); no global tag decoders (dates, bignums...).
  ignoreGlobalTags: true
}

/** Deterministic CBOR of a value. @throws CborError for what CBOR receipts never hold (floats, undefined). */
export const encode = (v: CborValue): Uint8Array => {
  try {
    return cborEncode(v, encodeOptions)
  } catch (e) {
    throw new CborError(e instanceof Error ? e.message : String(e))
  }
}

/**
 * One CBOR item from `bytes`, which must hold nothing else. Integers come back as numbers when safe,
 * bigints otherwise; maps as Maps (keys as decoded); tags as cbor2 `Tag`s.
 * @throws CborError on anything malformed or outside the subset above.
 */
export const decode = (bytes: Uint8Array): CborValue => {
  try {
    // cbor2 gives byte strings as views of its input: a private copy, so they are plain Uint8Arrays
    // (not Buffers when given one) and a caller reusing its buffer cannot change them.
    return cborDecode(Uint8Array.from(bytes), decodeOptions) as CborValue
  } catch (e) {
    throw new CborError(e instanceof Error ? e.message : String(e))
  }
}
