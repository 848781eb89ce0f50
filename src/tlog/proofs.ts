/**
 * RFC 9162 proofs of a stored log (./tree.ts): inclusion of a leaf in a tree (RFC 9162 §2.1.3, Go's
 * ProveRecord) and consistency between two trees (§2.1.4, Go's ProveTree). Each asks the reader once for
 * the stored hashes of the subtrees the proof is made of; ./check.ts checks the results.
 */
import * as Effect from "effect/Effect"
import { TreeRangeError } from "./errors.ts"
import { split } from "./hash.ts"
import { type Cursor, type HashReader, isTreeSize, readExactly, subTreeHash, subTreeIndex } from "./tree.ts"

/** The stored indexes the proof that leaf n is in the subtree [lo, hi) needs, appended to `need`. */
const leafProofIndex = (lo: number, hi: number, n: number, need: Array<number>): Array<number> => {
  if (lo + 1 === hi) return need
  const k = split(hi - lo)
  if (n < lo + k) {
    leafProofIndex(lo, lo + k, n, need)
    subTreeIndex(lo + k, hi, need)
  } else {
    subTreeIndex(lo, lo + k, need)
    leafProofIndex(lo + k, hi, n, need)
  }
  return need
}

/** The proof that leaf n is in the subtree [lo, hi), from the hashes `leafProofIndex` asked for; sibling hashes from the leaf up. */
const leafProof = (lo: number, hi: number, n: number, cursor: Cursor): Array<Uint8Array> => {
  // At the leaf: the verifier has its hash.
  if (lo + 1 === hi) return []
  const k = split(hi - lo)
  if (n < lo + k) {
    const p = leafProof(lo, lo + k, n, cursor)
    p.push(subTreeHash(lo + k, hi, cursor))
    return p
  }
  const sibling = subTreeHash(lo, lo + k, cursor)
  const p = leafProof(lo + k, hi, n, cursor)
  p.push(sibling)
  return p
}

/** The inclusion proof (audit path) of leaf `index` in the tree of the log's first `treeSize` leaves. */
export const proveInclusion = <E>(
  index: number,
  treeSize: number,
  reader: HashReader<E>
): Effect.Effect<Array<Uint8Array>, E | TreeRangeError> => {
  if (!isTreeSize(treeSize) || !Number.isSafeInteger(index) || index < 0 || index >= treeSize) {
    return Effect.fail(new TreeRangeError({ detail: `no leaf ${index} in a tree of size ${treeSize}` }))
  }
  const indexes = leafProofIndex(0, treeSize, index, [])
  return readExactly(reader, indexes).pipe(Effect.map((hashes) => leafProof(0, treeSize, index, { hashes, i: 0 })))
}

/** The stored indexes the consistency sub-proof over [lo, hi) for an old tree of n leaves needs, appended to `need`. */
const treeProofIndex = (lo: number, hi: number, n: number, need: Array<number>): Array<number> => {
  if (n === hi) return lo === 0 ? need : subTreeIndex(lo, hi, need)
  const k = split(hi - lo)
  if (n <= lo + k) {
    treeProofIndex(lo, lo + k, n, need)
    subTreeIndex(lo + k, hi, need)
  } else {
    subTreeIndex(lo, lo + k, need)
    treeProofIndex(lo + k, hi, n, need)
  }
  return need
}

/** RFC 6962 §2.1.2's SUBPROOF over [lo, hi) for an old tree of n leaves, from the hashes `treeProofIndex` asked for. */
const treeProof = (lo: number, hi: number, n: number, cursor: Cursor): Array<Uint8Array> => {
  if (n === hi) {
    // The old tree itself: the verifier has its root.
    if (lo === 0) return []
    return [subTreeHash(lo, hi, cursor)]
  }
  const k = split(hi - lo)
  if (n <= lo + k) {
    const p = treeProof(lo, lo + k, n, cursor)
    p.push(subTreeHash(lo + k, hi, cursor))
    return p
  }
  const sibling = subTreeHash(lo, lo + k, cursor)
  const p = treeProof(lo + k, hi, n, cursor)
  p.push(sibling)
  return p
}

/**
 * The consistency proof from the tree of the first `oldSize` leaves to the tree of the first `newSize`
 * (1 ≤ oldSize ≤ newSize; empty when they are equal). What `anchorWithCheckpoint` carries.
 */
export const proveConsistency = <E>(
  oldSize: number,
  newSize: number,
  reader: HashReader<E>
): Effect.Effect<Array<Uint8Array>, E | TreeRangeError> => {
  if (!isTreeSize(newSize) || !Number.isSafeInteger(oldSize) || oldSize < 1 || oldSize > newSize) {
    return Effect.fail(new TreeRangeError({ detail: `no consistency proof from size ${oldSize} to size ${newSize}` }))
  }
  const indexes = treeProofIndex(0, newSize, oldSize, [])
  return readExactly(reader, indexes).pipe(Effect.map((hashes) => treeProof(0, newSize, oldSize, { hashes, i: 0 })))
}
