// The RFC 9162 (RFC 6962 §2.1) Merkle tree: the "transparency log" tree of Certificate Transparency,
// Tessera, Rekor v2 and Sigsum, and the tree of COSE Receipts with `vds` = RFC9162_SHA256 (RFC 9942).
// anchord builds it over each batch's record hashes beside the OpenZeppelin tree (./merkle.ts), so a
// record can also be proved with a standard receipt (docs/proof-format.md, "COSE Receipts").
//
// - leaf hash = SHA-256(0x00 || leaf), interior node = SHA-256(0x01 || left || right);
// - MTH(D[n]) for n > 1 splits at k, the largest power of two < n: left D[0:k], right D[k:n]
//   (so the tree is not complete, and a proof's shape depends on index and size);
// - an inclusion proof (audit path) lists the sibling subtree hashes from the leaf up;
// - verification is the algorithm of RFC 9162 §2.1.3.2, which needs the leaf index and tree size.
// The empty tree (root SHA-256("")) is not built: a batch has at least one leaf.
//
// SHA-256 is node:crypto's one-shot `hash` (the browser bundle swaps in @noble/hashes: web/build.ts).
import { hash } from "node:crypto"

const LEAF_PREFIX = new Uint8Array([0])
const NODE_PREFIX = new Uint8Array([1])

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

/** SHA-256(0x00 || leaf). */
export const leafHash = (leaf: Uint8Array): Uint8Array => sha256(LEAF_PREFIX, leaf)

/** SHA-256(0x01 || left || right). */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(NODE_PREFIX, left, right)

/** The largest power of two strictly smaller than n (n ≥ 2): where RFC 9162 splits a tree of n leaves. */
export const split = (n: number): number => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

export interface LogTree {
  /** MTH of all the leaves, 32 bytes. */
  readonly root: Uint8Array
  /** `proofs[i]`: the inclusion proof (audit path) of leaf i, sibling hashes from the leaf up. */
  readonly proofs: ReadonlyArray<ReadonlyArray<Uint8Array>>
}

/**
 * The tree of `leaves` (raw leaf inputs, in order) with every leaf's inclusion proof: one pass,
 * 2n - 1 hashes, each subtree hash appended to the proofs of the leaves on the other side of its split.
 * @throws TypeError on an empty list.
 */
export function buildLogTree(leaves: ReadonlyArray<Uint8Array>): LogTree {
  const n = leaves.length
  if (n === 0) throw new TypeError("buildLogTree: at least one leaf is required")
  const proofs: Array<Array<Uint8Array>> = Array.from({ length: n }, () => [])
  const mth = (lo: number, hi: number): Uint8Array => {
    if (hi - lo === 1) return leafHash(leaves[lo]!)
    const mid = lo + split(hi - lo)
    // Subtrees first: their (deeper) siblings come before this level's in each proof.
    const left = mth(lo, mid)
    const right = mth(mid, hi)
    for (let i = lo; i < mid; i++) proofs[i]!.push(right)
    for (let i = mid; i < hi; i++) proofs[i]!.push(left)
    return nodeHash(left, right)
  }
  return { root: mth(0, n), proofs }
}

/**
 * The root implied by a leaf hash, its index, the tree size and an inclusion proof: RFC 9162
 * §2.1.3.2 step by step. `undefined` when the proof cannot belong to a tree of that size (index out
 * of range, too long or too short).
 */
export function rootFromInclusionProof(
  leafIndex: number,
  treeSize: number,
  leaf: Uint8Array,
  proof: ReadonlyArray<Uint8Array>
): Uint8Array | undefined {
  if (!Number.isSafeInteger(leafIndex) || !Number.isSafeInteger(treeSize) || leafIndex < 0 || leafIndex >= treeSize) {
    return undefined
  }
  if (leaf.length !== 32 || proof.some((p) => p.length !== 32)) return undefined
  // Plain arithmetic, not bitwise operators: sizes may pass 2^31.
  let fn = leafIndex
  let sn = treeSize - 1
  let r = leaf
  for (const p of proof) {
    if (sn === 0) return undefined
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r)
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2)
          sn = Math.floor(sn / 2)
        }
      }
    } else {
      r = nodeHash(r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 ? r : undefined
}

const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i])

/** True when `proof` proves the leaf hash `leaf` at `leafIndex` in the tree of `treeSize` leaves with root `root`. */
export function verifyInclusion(
  leafIndex: number,
  treeSize: number,
  leaf: Uint8Array,
  proof: ReadonlyArray<Uint8Array>,
  root: Uint8Array
): boolean {
  const computed = rootFromInclusionProof(leafIndex, treeSize, leaf, proof)
  return computed !== undefined && equalBytes(computed, root)
}

// --- record hashes ---------------------------------------------------------------------------

const HASH_RE = /^(?:0x)?[0-9a-fA-F]{64}$/

/** 32 bytes from 64 hex digits (0x prefix and upper case accepted). */
export const hashBytes = (hex: string): Uint8Array => {
  if (typeof hex !== "string" || !HASH_RE.test(hex)) {
    throw new TypeError(`expected 64 hex characters (optionally 0x-prefixed), got ${JSON.stringify(hex)}`)
  }
  const body = hex.length === 66 ? hex.slice(2) : hex
  const out = new Uint8Array(32)
  for (let i = 0; i < 32; i++) out[i] = parseInt(body.slice(2 * i, 2 * i + 2), 16)
  return out
}

export const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")

/**
 * The leaf order of a batch's RFC 9162 tree: the record hashes sorted ascending (ties, i.e. duplicate
 * hashes, in input order). Sorted, not as claimed: the root is then a function of the batch's hashes
 * alone, like the OpenZeppelin root, so records that join a live batch with the same leaves
 * (BatchStore.cutBatch) get proofs for the same root. Returns input indices, `order[j]` = the input at leaf j.
 */
export function logLeafOrder(hashes: ReadonlyArray<string>): Array<number> {
  const keys = hashes.map((h) => (h.length === 66 ? h.slice(2) : h).toLowerCase())
  const order = keys.map((_, i) => i)
  order.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : a - b))
  return order
}

/** A proof stored as concatenated 32-byte hashes, split again. */
export const splitProof = (bytes: Uint8Array): Array<Uint8Array> => {
  if (bytes.length % 32 !== 0) throw new TypeError(`a proof is a multiple of 32 bytes, got ${bytes.length}`)
  const out: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += 32) out.push(bytes.slice(i, i + 32))
  return out
}
