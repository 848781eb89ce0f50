/**
 * Differential test of the hand-written fast path of migration 0025 (src/anchoring/batchTrees.ts): proofs derived
 * from a batch's stored levels equal, byte for byte, the proofs the per-record code computes — `buildTree`
 * (OpenZeppelin) and `buildRecordLog` / `buildLogTree` (RFC 9162) — for seeded random batches of 1 to ~3,000
 * leaves (1, 2, 3, powers of two and ±1 among them, duplicate hashes in some), at many indices.
 *   npx vitest run test/anchoring/batch-trees.test.ts
 */
import { describe, expect, it } from "vitest"
import { logProofOffsets, merkleProofOffsets } from "../../src/anchoring/batchTrees.ts"
import { buildTree, buildTreeLevels } from "../../src/anchoring/merkle.ts"
import { buildRecordLogLevels } from "../../src/anchoring/recordLog.ts"
import { hashBytes, logLeafOrder, toHex } from "../../src/anchoring/rfc9162.ts"
import { buildLogTree, buildRecordLog, logProofFrom, merkleProofFrom } from "../support/trees.ts"

/** mulberry32: a seeded generator, so a failure replays. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const SEED = 0x25_0025
const rand = prng(SEED)
const int = (n: number) => Math.floor(rand() * n)
const randomHash = () => Array.from({ length: 64 }, () => "0123456789abcdef"[int(16)]).join("")

const SIZES = [
  1,
  2,
  3,
  ...[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048].flatMap((p) => [p - 1, p, p + 1]),
  ...Array.from({ length: 16 }, () => 1 + int(3_000))
].filter((n, i, all) => n >= 1 && all.indexOf(n) === i)

/** The batch's hashes: every fourth batch with duplicates (a hash taken again), some upper case or 0x-prefixed. */
const hashesOf = (n: number, k: number): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < n; i++) {
    const h = k % 4 === 3 && i > 0 && rand() < 0.2 ? out[int(i)]!.replace(/^0x/, "").toLowerCase() : randomHash()
    out.push(rand() < 0.1 ? `0x${h}` : rand() < 0.1 ? h.toUpperCase() : h)
  }
  return out
}

/** All indices of a small batch; of a large one the ends and 300 at random. */
const indicesOf = (n: number): Array<number> =>
  n <= 400 ? Array.from({ length: n }, (_, i) => i) : [0, 1, n - 2, n - 1, ...Array.from({ length: 300 }, () => int(n))]

describe("proofs from a batch's stored levels (migration 0025)", () => {
  it(`equal buildTree's and the RFC 9162 code's, byte for byte, for ${SIZES.length} seeded batch sizes (seed ${SEED})`, () => {
    let compared = 0
    SIZES.forEach((n, k) => {
      const hashes = hashesOf(n, k)
      const tree = buildTree(hashes)
      const levels = buildTreeLevels(hashes)
      expect(levels.root, `n=${n}: OpenZeppelin root`).toBe(tree.root)
      expect(levels.levels.length).toBe((2 * n - 1) * 32)
      const log = buildRecordLog(hashes)
      const logLevels = buildRecordLogLevels(hashes)
      expect(logLevels.root, `n=${n}: RFC 9162 root`).toBe(log.root)
      // The reference tree of rfc9162.ts (held to RFC 6962's vectors by rfc9162.test.ts), for the smaller batches.
      const reference = n <= 700 ? buildLogTree(logLeafOrder(hashes).map((i) => hashBytes(hashes[i]!))) : undefined
      if (reference !== undefined) expect(`0x${toHex(reference.root)}`).toBe(log.root)
      for (const i of indicesOf(n)) {
        expect(merkleProofFrom(levels.levels, n, levels.positions[i]!), `n=${n} i=${i}: OpenZeppelin proof`).toEqual(tree.proofs[i])
        const index = logLevels.indices[i]!
        expect(index, `n=${n} i=${i}: log index`).toBe(log.entries[i]!.index)
        const derived = toHex(logProofFrom(logLevels.levels, n, index))
        expect(derived, `n=${n} i=${i}: RFC 9162 proof`).toBe(log.entries[i]!.proofHex)
        if (reference !== undefined) expect(derived).toBe(reference.proofs[index]!.map(toHex).join(""))
        compared++
      }
    })
    expect(compared).toBeGreaterThan(8_000)
  })

  it("a position outside the tree is refused, not read from elsewhere in the levels", () => {
    expect(() => merkleProofOffsets(5, 5)).toThrow(RangeError)
    expect(() => merkleProofOffsets(5, -1)).toThrow(RangeError)
    expect(() => merkleProofOffsets(5, NaN)).toThrow(RangeError)
    expect(() => logProofOffsets(5, 5)).toThrow(RangeError)
    expect(merkleProofOffsets(1, 0)).toEqual([])
    expect(logProofOffsets(1, 0)).toEqual([])
  })
})
