/**
 * A log of n leaves whose tree hashes live in a store: the "stored hash" layout of Go's
 * golang.org/x/mod/sumdb/tlog (tlog.go), after Crosby and Wallach, "Efficient Data Structures for
 * Tamper-Evident Logging" §3.3. Appending leaf n stores its leaf hash and the hash of every perfect
 * subtree that leaf completes, at the indexes that follow the previous leaf's: a log of n leaves is
 * `storedHashCount(n)` (< 2n) hashes, numbered densely from 0, never rewritten. Every tree hash and proof
 * of any size up to n is then a function of at most 2·log2(n) of them, read in one call.
 *
 * Pure except for the reads: a HashReader returns an Effect, so the store behind it can be PostgreSQL.
 */
import * as Effect from "effect/Effect"
import { TreeRangeError } from "./errors.ts"
import { emptyTreeHash, leafHash, nodeHash } from "./hash.ts"

/** Reads stored hashes by index (see `storedHashIndex`). */
export interface HashReader<E = never> {
  /**
   * The hashes at these stored-hash indexes, in the same order, one per index, or a failure. The functions
   * here always ask in increasing order, which a store may rely on to read a range.
   */
  readonly readHashes: (indexes: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<Uint8Array>, E>
}

/**
 * The largest tree this library handles: stored-hash indexes (about 2n) stay exact as numbers far below 2^53.
 * 2^48 leaves is ~2.8 · 10^14.
 */
export const MAX_TREE_SIZE = 2 ** 48

/** A size this library handles: a whole number from 0 to MAX_TREE_SIZE. */
export const isTreeSize = (n: number): boolean => Number.isSafeInteger(n) && n >= 0 && n <= MAX_TREE_SIZE

/** Number of trailing zero bits of x ≥ 1. */
const trailingZeros = (x: number): number => {
  let z = 0
  while (x % 2 === 0) {
    x /= 2
    z++
  }
  return z
}

/**
 * The index at which the hash of tree node (level, n) is stored: level 0 are leaf hashes, node n of level L
 * covers leaves [n·2^L, (n+1)·2^L).
 */
export const storedHashIndex = (level: number, n: number): number => {
  // Level L's n'th hash is written right after level L+1's 2n+1'th hash: go down to level 0.
  for (let l = level; l > 0; l--) n = 2 * n + 1
  // Level 0's n'th hash is written at n + n/2 + n/4 + … (the hashes of the subtrees completed before it).
  let i = 0
  for (; n > 0; n = Math.floor(n / 2)) i += n
  return i + level
}

/** The inverse of `storedHashIndex`. */
export const splitStoredHashIndex = (index: number): { readonly level: number; readonly n: number } => {
  // storedHashIndex(0, n) < 2n, so the last leaf stored at or before index is in [index/2, index/2 + log2(index)].
  let n = Math.floor(index / 2)
  let indexN = storedHashIndex(0, n)
  for (;;) {
    // Leaf n adds 1 + trailingZeros(n + 1) hashes.
    const x = indexN + 1 + trailingZeros(n + 1)
    if (x > index) break
    n++
    indexN = x
  }
  // The hash was stored with leaf n: it is one of (0, n), (1, n/2), (2, n/4), …
  const level = index - indexN
  return { level, n: Math.floor(n / 2 ** level) }
}

/** How many hashes a log of n leaves has stored: the index the next leaf's hashes start at. */
export const storedHashCount = (n: number): number => (n === 0 ? 0 : storedHashIndex(0, n))

/** Reads exactly `indexes.length` hashes; a reader that answers otherwise is a bug of the store (a defect). */
export const readExactly = <E>(reader: HashReader<E>, indexes: ReadonlyArray<number>): Effect.Effect<ReadonlyArray<Uint8Array>, E> =>
  indexes.length === 0 ? Effect.succeed([]) : reader.readHashes(indexes).pipe(
    Effect.flatMap((hashes) =>
      hashes.length === indexes.length
        ? Effect.succeed(hashes)
        : Effect.die(new Error(`tlog: readHashes(${indexes.length} indexes) returned ${hashes.length} hashes`))
    )
  )

/** The stored indexes that leaf n reads to hash the subtrees it completes (those of its left siblings), sorted. */
const completedSiblings = (n: number): Array<number> => {
  const m = trailingZeros(n + 1)
  const indexes: Array<number> = new Array(m)
  // n >> i is odd for i < m: its left sibling at level i is node (n >> i) - 1.
  for (let i = 0; i < m; i++) indexes[m - 1 - i] = storedHashIndex(i, Math.floor(n / 2 ** i) - 1)
  return indexes
}

/**
 * The hashes to store when appending `entries` (leaf inputs, e.g. 32-byte record hashes) as leaves
 * start, start+1, …: they go at indexes storedHashCount(start), storedHashCount(start) + 1, … up to
 * storedHashCount(start + entries.length) - 1. Reads the few earlier hashes it needs in one call.
 */
export const appendHashes = <E>(
  start: number,
  entries: ReadonlyArray<Uint8Array>,
  reader: HashReader<E>
): Effect.Effect<Array<Uint8Array>, E | TreeRangeError> => {
  if (!isTreeSize(start) || !isTreeSize(start + entries.length)) {
    return Effect.fail(new TreeRangeError({ detail: `cannot append ${entries.length} leaves at ${start}` }))
  }
  const base = storedHashCount(start)
  const older = [...new Set(entries.flatMap((_, j) => completedSiblings(start + j)).filter((x) => x < base))].sort((a, b) => a - b)
  return readExactly(reader, older).pipe(Effect.map((hashes) => {
    const old = new Map(older.map((x, i) => [x, hashes[i]!]))
    const out: Array<Uint8Array> = []
    const at = (x: number) => (x < base ? old.get(x)! : out[x - base]!)
    entries.forEach((entry, j) => {
      const siblings = completedSiblings(start + j)
      let h = leafHash(entry)
      out.push(h)
      for (let i = siblings.length - 1; i >= 0; i--) {
        h = nodeHash(at(siblings[i]!), h)
        out.push(h)
      }
    })
    return out
  }))
}

/** Go's maxpow2: the largest power of two k < n and its log2. */
const maxPow2 = (n: number): { readonly k: number; readonly level: number } => {
  let level = 0
  while (2 ** (level + 1) < n) level++
  return { k: 2 ** level, level }
}

/** The stored indexes whose hashes make up MTH(D[lo:hi]) (lo a multiple of the first subtree's size), appended to `need`. */
export const subTreeIndex = (lo: number, hi: number, need: Array<number>): Array<number> => {
  // The left part of [lo, hi) with as many leaves as a power of two allows is one stored hash; the fringe repeats.
  while (lo < hi) {
    const { k, level } = maxPow2(hi - lo + 1)
    if (lo % k !== 0) throw new Error("tlog: bad math in subTreeIndex")
    need.push(storedHashIndex(level, lo / k))
    lo += k
  }
  return need
}

/** Where the hashes `subTreeIndex` asked for are consumed from. */
export interface Cursor {
  readonly hashes: ReadonlyArray<Uint8Array>
  i: number
}

/** MTH(D[lo:hi]) from the hashes at `cursor` that `subTreeIndex(lo, hi)` asked for; the cursor moves past them. */
export const subTreeHash = (lo: number, hi: number, cursor: Cursor): Uint8Array => {
  let count = 0
  while (lo < hi) {
    lo += maxPow2(hi - lo + 1).k
    count++
  }
  const start = cursor.i
  if (count === 0 || start + count > cursor.hashes.length) throw new Error("tlog: bad math in subTreeHash")
  cursor.i += count
  let h = cursor.hashes[start + count - 1]!
  for (let i = start + count - 2; i >= start; i--) h = nodeHash(cursor.hashes[i]!, h)
  return h
}

/** The root hash of the tree of the log's first n leaves (SHA-256("") for n = 0): one read of at most 1 + log2(n) hashes. */
export const treeHash = <E>(n: number, reader: HashReader<E>): Effect.Effect<Uint8Array, E | TreeRangeError> => {
  if (!isTreeSize(n)) return Effect.fail(new TreeRangeError({ detail: `invalid tree size ${n}` }))
  if (n === 0) return Effect.succeed(emptyTreeHash())
  const indexes = subTreeIndex(0, n, [])
  return readExactly(reader, indexes).pipe(Effect.map((hashes) => subTreeHash(0, n, { hashes, i: 0 })))
}
