// The hashes of the RFC 9162 (RFC 6962 §2.1) Merkle tree, shared by every tree anchord builds with them:
// each batch's own tree (src/anchoring/rfc9162.ts) and each network's transparency log (this folder).
//
// - leaf hash = SHA-256(0x00 || leaf), interior node = SHA-256(0x01 || left || right);
// - MTH(D[n]) for n > 1 splits at k, the largest power of two < n: left D[0:k], right D[k:n];
// - the empty tree's hash is SHA-256("").
//
// SHA-256 is node:crypto's one-shot `hash` (the verify page's bundle swaps in @noble/hashes: web/build.ts).
// Sizes and indexes are plain numbers (exact up to 2^53), so the arithmetic avoids 32-bit bitwise operators.
import { hash } from "node:crypto"

export const HASH_SIZE = 32

const sha256 = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const total = parts.reduce((n, p) => n + p.length, 0)
  const buf = new Uint8Array(total)
  let off = 0
  for (const p of parts) {
    buf.set(p, off)
    off += p.length
  }
  return new Uint8Array(hash("sha256", buf, "buffer"))
}

const LEAF_PREFIX = new Uint8Array([0])
const NODE_PREFIX = new Uint8Array([1])

/** SHA-256(0x00 || leaf). */
export const leafHash = (leaf: Uint8Array): Uint8Array => sha256(LEAF_PREFIX, leaf)

/** SHA-256(0x01 || left || right). */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(NODE_PREFIX, left, right)

/** The root of the empty tree, SHA-256(""). */
export const emptyTreeHash = (): Uint8Array => sha256()

/** The largest power of two strictly smaller than n (n ≥ 2): where RFC 9162 splits a tree of n leaves. */
export const split = (n: number): number => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

export const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i])
