/**
 * Checking RFC 9162 proofs: synchronous and pure (no reader, no Effect), so the verify page's bundle, the
 * CLI's verifier and the monitor share them. Inclusion: RFC 9162 §2.1.3.2 step by step (the algorithm the
 * batch receipts have used). Consistency: Go's sumdb/tlog CheckTree (RFC 6962 §2.1.2's proof run from the
 * root down), which accepts exactly the proofs RFC 9162 §2.1.4.2 accepts.
 */
import { equalBytes, HASH_SIZE, nodeHash, split } from "./hash.ts"

const isIndex = (n: number) => Number.isSafeInteger(n) && n >= 0

/**
 * The root implied by a leaf hash, its index, the tree size and an inclusion proof (sibling hashes from the
 * leaf up). `undefined` when the proof cannot belong to a tree of that size (index out of range, too long or
 * too short).
 */
export function rootFromInclusionProof(
  leafIndex: number,
  treeSize: number,
  leaf: Uint8Array,
  proof: ReadonlyArray<Uint8Array>
): Uint8Array | undefined {
  if (!isIndex(leafIndex) || !isIndex(treeSize) || leafIndex >= treeSize) return undefined
  if (leaf.length !== HASH_SIZE || proof.some((p) => p.length !== HASH_SIZE)) return undefined
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

/** True when `proof` proves the leaf hash `leaf` at `leafIndex` in the tree of `treeSize` leaves with root `root` (Go: CheckRecord). */
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

/**
 * Runs the consistency proof `p` over the subtree of leaves [lo, hi) of the new tree, where the old tree has
 * n leaves and root `old`: the subtree's hash in the old tree and in the new one, or undefined when the proof
 * has the wrong length. The proof's last hash belongs to the highest level.
 */
const runTreeProof = (
  p: ReadonlyArray<Uint8Array>,
  end: number,
  lo: number,
  hi: number,
  n: number,
  old: Uint8Array
): { readonly oldHash: Uint8Array; readonly newHash: Uint8Array } | undefined => {
  // Reached common ground: the subtree [lo, hi) is all old leaves.
  if (n === hi) {
    if (lo === 0) return end === 0 ? { oldHash: old, newHash: old } : undefined
    return end === 1 ? { oldHash: p[0]!, newHash: p[0]! } : undefined
  }
  if (end === 0) return undefined
  const k = split(hi - lo)
  const top = p[end - 1]!
  if (n <= lo + k) {
    const sub = runTreeProof(p, end - 1, lo, lo + k, n, old)
    return sub && { oldHash: sub.oldHash, newHash: nodeHash(sub.newHash, top) }
  }
  const sub = runTreeProof(p, end - 1, lo + k, hi, n, old)
  return sub && { oldHash: nodeHash(top, sub.oldHash), newHash: nodeHash(top, sub.newHash) }
}

/**
 * True when `proof` shows that the tree of `newSize` leaves with root `newRoot` extends the tree of `oldSize`
 * leaves with root `oldRoot` (Go: CheckTree). Needs 1 ≤ oldSize ≤ newSize; equal sizes need an empty proof and
 * equal roots. From the empty tree every tree is an extension, with nothing to check: callers handle size 0.
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: ReadonlyArray<Uint8Array>
): boolean {
  if (!isIndex(oldSize) || !isIndex(newSize) || oldSize < 1 || oldSize > newSize) return false
  if (oldRoot.length !== HASH_SIZE || newRoot.length !== HASH_SIZE || proof.some((p) => p.length !== HASH_SIZE)) return false
  const run = runTreeProof(proof, proof.length, 0, newSize, oldSize, oldRoot)
  return run !== undefined && equalBytes(run.oldHash, oldRoot) && equalBytes(run.newHash, newRoot)
}
