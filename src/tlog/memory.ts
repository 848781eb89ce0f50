/**
 * The RFC 9162 definitions computed directly over a list of leaf hashes in memory: MTH (§2.1.1), PATH
 * (§2.1.3.1) and PROOF/SUBPROOF (§2.1.4.1), each recursive as the RFC writes it. O(n log n): for tests, and
 * for tools that build a small log's proofs without a store (a contract test's `anchorWithCheckpoint`
 * arguments). They are also the reference the stored-hash functions (./tree.ts, ./proofs.ts) are held to.
 * `memoryHashReader` serves stored hashes kept in an array.
 */
import * as Effect from "effect/Effect"
import { emptyTreeHash, nodeHash, split } from "./hash.ts"
import type { HashReader } from "./tree.ts"

const range = (leaves: ReadonlyArray<Uint8Array>, size: number, what: string) => {
  if (!Number.isSafeInteger(size) || size < 0 || size > leaves.length) {
    throw new RangeError(`${what}: size ${size} is not within the ${leaves.length} leaves given`)
  }
}

const mth = (leaves: ReadonlyArray<Uint8Array>, lo: number, hi: number): Uint8Array => {
  if (hi - lo === 1) return leaves[lo]!
  const k = split(hi - lo)
  return nodeHash(mth(leaves, lo, lo + k), mth(leaves, lo + k, hi))
}

/** MTH of the first `size` leaf hashes (all by default); SHA-256("") for none. */
export const merkleTreeHash = (leafHashes: ReadonlyArray<Uint8Array>, size: number = leafHashes.length): Uint8Array => {
  range(leafHashes, size, "merkleTreeHash")
  return size === 0 ? emptyTreeHash() : mth(leafHashes, 0, size)
}

/** PATH(index, D[0:size]): the inclusion proof of leaf `index` in the tree of the first `size` leaf hashes. */
export const inclusionProof = (leafHashes: ReadonlyArray<Uint8Array>, index: number, size: number = leafHashes.length): Array<Uint8Array> => {
  range(leafHashes, size, "inclusionProof")
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new RangeError(`inclusionProof: no leaf ${index} in a tree of ${size}`)
  const path = (lo: number, hi: number): Array<Uint8Array> => {
    if (hi - lo === 1) return []
    const k = split(hi - lo)
    return index < lo + k ? [...path(lo, lo + k), mth(leafHashes, lo + k, hi)] : [...path(lo + k, hi), mth(leafHashes, lo, lo + k)]
  }
  return path(0, size)
}

/**
 * PROOF(oldSize, D[0:newSize]): the consistency proof from the tree of the first `oldSize` leaf hashes to the
 * tree of the first `newSize` (all by default); 1 ≤ oldSize ≤ newSize.
 */
export const consistencyProof = (
  leafHashes: ReadonlyArray<Uint8Array>,
  oldSize: number,
  newSize: number = leafHashes.length
): Array<Uint8Array> => {
  range(leafHashes, newSize, "consistencyProof")
  if (!Number.isSafeInteger(oldSize) || oldSize < 1 || oldSize > newSize) {
    throw new RangeError(`consistencyProof: no proof from size ${oldSize} to size ${newSize}`)
  }
  // SUBPROOF(m, D[lo:hi], b), m counted from lo.
  const subproof = (m: number, lo: number, hi: number, whole: boolean): Array<Uint8Array> => {
    if (m === hi - lo) return whole ? [] : [mth(leafHashes, lo, hi)]
    const k = split(hi - lo)
    return m <= k
      ? [...subproof(m, lo, lo + k, whole), mth(leafHashes, lo + k, hi)]
      : [...subproof(m - k, lo + k, hi, false), mth(leafHashes, lo, lo + k)]
  }
  return subproof(oldSize, 0, newSize, true)
}

/** A HashReader over stored hashes kept in an array (index i at position i); an index past its end is a defect. */
export const memoryHashReader = (stored: ReadonlyArray<Uint8Array>): HashReader => ({
  readHashes: (indexes) =>
    Effect.suspend(() => {
      const out = indexes.map((x) => stored[x])
      const missing = indexes.find((_, i) => out[i] === undefined)
      return missing === undefined
        ? Effect.succeed(out as ReadonlyArray<Uint8Array>)
        : Effect.die(new RangeError(`memoryHashReader: no stored hash ${missing} (${stored.length} stored)`))
    })
})
