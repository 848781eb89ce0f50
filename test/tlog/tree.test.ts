// src/tlog/tree.ts, proofs.ts, check.ts and memory.ts: the stored-hash log against Go's sumdb/tlog tests
// (tlog_test.go: TestTree, TestSplitStoredHashIndex, TestEmptyTree, ported), the RFC 6962 reference vectors
// of transparency-dev/merkle (./vectors.ts, with its corruption probes for consistency proofs), and the RFC's
// recursive definitions computed in memory.
//   npx vitest run test/tlog/tree.test.ts
import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { rootFromInclusionProof, verifyConsistency, verifyInclusion } from "../../src/tlog/check.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { consistencyProof, inclusionProof, memoryHashReader, merkleTreeHash } from "../../src/tlog/memory.ts"
import { proveConsistency, proveInclusion } from "../../src/tlog/proofs.ts"
import { appendHashes, type HashReader, splitStoredHashIndex, storedHashCount, storedHashIndex, treeHash } from "../../src/tlog/tree.ts"
import { CONSISTENCY, INCLUSION, LEAF_INPUTS, ROOTS } from "./vectors.ts"

const hd = (h: string) => new Uint8Array(Buffer.from(h, "hex"))
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const run = <A, E>(e: Effect.Effect<A, E>): A => Effect.runSync(e)
const text = (s: string) => new Uint8Array(Buffer.from(s))

/** Go's testHashStorage: an array of stored hashes whose reads must come in increasing order. */
const storage = (stored: Array<Uint8Array>): HashReader => {
  const inner = memoryHashReader(stored)
  return {
    readHashes: (indexes) => {
      for (let i = 1; i < indexes.length; i++) if (indexes[i - 1]! >= indexes[i]!) throw new Error(`indexes out of order: ${indexes.join(",")}`)
      return inner.readHashes(indexes)
    }
  }
}

/** Appends leaves one at a time, as Go's TestTree does with StoredHashes. */
const buildLog = (entries: ReadonlyArray<Uint8Array>) => {
  const stored: Array<Uint8Array> = []
  for (let i = 0; i < entries.length; i++) stored.push(...run(appendHashes(i, [entries[i]!], storage(stored))))
  return stored
}

const flip = (p: ReadonlyArray<Uint8Array>, k: number) => p.map((h, i) => (i === k ? Uint8Array.from(h, (b, j) => (j === 0 ? b ^ 1 : b)) : h))

describe("stored hashes (Go's tlog_test.go)", () => {
  it("TestTree: 100 leaves appended one by one; every tree hash, inclusion and consistency proof so far checks, and each corrupted proof hash fails", () => {
    const stored: Array<Uint8Array> = []
    const reader = storage(stored)
    const trees: Array<Uint8Array> = []
    const leaves: Array<Uint8Array> = []
    for (let i = 0; i < 100; i++) {
      const data = text(`leaf ${i}`)
      stored.push(...run(appendHashes(i, [data], reader)))
      leaves.push(leafHash(data))
      expect(storedHashCount(i + 1), `StoredHashCount(${i + 1})`).toBe(stored.length)
      const th = run(treeHash(i + 1, reader))
      trees.push(th)
      expect(hex(th)).toBe(hex(merkleTreeHash(leaves)))

      for (let j = 0; j <= i; j++) {
        const p = run(proveInclusion(j, i + 1, reader))
        expect(verifyInclusion(j, i + 1, leaves[j]!, p, th), `CheckRecord(${i + 1}, ${j})`).toBe(true)
        for (let k = 0; k < p.length; k++) expect(verifyInclusion(j, i + 1, leaves[j]!, flip(p, k), th), `corrupt #${k}`).toBe(false)
      }
      for (let j = 0; j <= i; j++) {
        expect(hex(run(treeHash(j + 1, reader))), `TreeHash(${j + 1})`).toBe(hex(trees[j]!))
        const p = run(proveConsistency(j + 1, i + 1, reader))
        expect(verifyConsistency(j + 1, i + 1, trees[j]!, th, p), `CheckTree(${i + 1}, ${j + 1})`).toBe(true)
        for (let k = 0; k < p.length; k++) expect(verifyConsistency(j + 1, i + 1, trees[j]!, th, flip(p, k)), `corrupt #${k}`).toBe(false)
      }
    }
  })

  it("TestSplitStoredHashIndex: the inverse of StoredHashIndex", () => {
    for (let l = 0; l < 10; l++) {
      for (let n = 0; n < 100; n++) expect(splitStoredHashIndex(storedHashIndex(l, n)), `${l}, ${n}`).toEqual({ level: l, n })
    }
    // Past 2^32: no 32-bit arithmetic anywhere.
    const n = 2 ** 40 + 12345
    expect(splitStoredHashIndex(storedHashIndex(3, n))).toEqual({ level: 3, n })
  })

  it("TestEmptyTree: TreeHash(0) = SHA-256(\"\") with no read", () => {
    const none: HashReader = { readHashes: () => Effect.die("no read expected") }
    expect(hex(run(treeHash(0, none)))).toBe(createHash("sha256").digest("hex"))
  })

  it("the stored layout: leaf n's hash at StoredHashIndex(0, n), completed subtrees right after it", () => {
    // 0:L0 1:L1 2:N(0,1) 3:L2 4:L3 5:N(2,3) 6:N(0..3) 7:L4
    expect([0, 1, 2, 3, 4].map((n) => storedHashIndex(0, n))).toEqual([0, 1, 3, 4, 7])
    expect([storedHashIndex(1, 0), storedHashIndex(1, 1), storedHashIndex(2, 0)]).toEqual([2, 5, 6])
    expect([0, 1, 2, 3, 4, 5].map(storedHashCount)).toEqual([0, 1, 3, 4, 7, 8])
  })

  it("appending a batch at once stores the same hashes as one leaf at a time, with one read", () => {
    const entries = Array.from({ length: 300 }, (_, i) => text(`entry ${i}`))
    const oneByOne = buildLog(entries)
    for (const [start, count] of [[0, 300], [1, 200], [7, 1], [100, 156], [255, 45]] as const) {
      const prefix = oneByOne.slice(0, storedHashCount(start))
      let reads = 0
      const counting: HashReader = {
        readHashes: (indexes) => {
          reads++
          return storage(prefix).readHashes(indexes)
        }
      }
      const batch = run(appendHashes(start, entries.slice(start, start + count), counting))
      expect(batch.map(hex), `${start}+${count}`).toEqual(oneByOne.slice(storedHashCount(start), storedHashCount(start + count)).map(hex))
      expect(reads).toBeLessThanOrEqual(1)
    }
  })

  it("refuses sizes and indexes that do not fit", () => {
    const reader = storage(buildLog([text("a"), text("b")]))
    const tag = <A, E extends { _tag: string }>(e: Effect.Effect<A, E>) => Effect.runSync(Effect.flip(e))._tag
    expect(tag(proveInclusion(2, 2, reader))).toBe("TreeRangeError")
    expect(tag(proveInclusion(-1, 2, reader))).toBe("TreeRangeError")
    expect(tag(proveConsistency(0, 2, reader))).toBe("TreeRangeError")
    expect(tag(proveConsistency(3, 2, reader))).toBe("TreeRangeError")
    expect(tag(treeHash(2 ** 53, reader))).toBe("TreeRangeError")
    // A reader answering with too few hashes is a store bug: a defect, not a failure.
    const short: HashReader = { readHashes: () => Effect.succeed([]) }
    expect(() => run(treeHash(2, short))).toThrow(/returned 0 hashes/)
  })
})

describe("the RFC 6962 reference vectors (transparency-dev/merkle)", () => {
  const stored = buildLog(LEAF_INPUTS)
  const reader = storage(stored)

  it("tree hashes of 1..8 leaves", () => {
    for (let n = 1; n <= 8; n++) expect(hex(run(treeHash(n, reader))), `size ${n}`).toBe(ROOTS[n - 1])
  })

  it("inclusion proofs: produced as published; with a hash added (trailing or preceding garbage) they imply no root", () => {
    const garbage = hd("cd".repeat(32))
    for (const v of INCLUSION) {
      const what = `${v.index}/${v.size}`
      expect(run(proveInclusion(v.index, v.size, reader)).map(hex), what).toEqual(v.proof)
      const leaf = leafHash(LEAF_INPUTS[v.index]!)
      expect(hex(rootFromInclusionProof(v.index, v.size, leaf, v.proof.map(hd))!), what).toBe(ROOTS[v.size - 1])
      expect(rootFromInclusionProof(v.index, v.size, leaf, [...v.proof.map(hd), garbage]), `${what}: trailing garbage`).toBeUndefined()
      expect(rootFromInclusionProof(v.index, v.size, leaf, [garbage, ...v.proof.map(hd)]), `${what}: preceding garbage`).toBeUndefined()
    }
  })

  it("consistency proofs: produced as published, they verify, and every corruption of verify_test.go fails", () => {
    for (const v of CONSISTENCY) {
      const what = `${v.size1} → ${v.size2}`
      const [r1, r2, proof] = [hd(v.root1), hd(v.root2), v.proof.map(hd)]
      expect(run(proveConsistency(v.size1, v.size2, reader)).map(hex), what).toEqual(v.proof)
      expect(consistencyProof(stored.filter((_, i) => splitStoredHashIndex(i).level === 0), v.size1, v.size2).map(hex), what).toEqual(v.proof)
      expect(verifyConsistency(v.size1, v.size2, r1, r2, proof), what).toBe(true)
      const garbage = hd("ab".repeat(32))
      const bad: Array<[string, number, number, Uint8Array, Uint8Array, ReadonlyArray<Uint8Array>]> = [
        ["wrong root1", v.size1, v.size2, garbage, r2, proof],
        ["wrong root2", v.size1, v.size2, r1, garbage, proof],
        ["size1 - 1", v.size1 - 1, v.size2, r1, r2, proof],
        ["size1 + 1", v.size1 + 1, v.size2, r1, r2, proof],
        ["size1 ^ 2", v.size1 ^ 2, v.size2, r1, r2, proof],
        ["size2 * 2", v.size1, v.size2 * 2, r1, r2, proof],
        ["size2 / 2", v.size1, Math.floor(v.size2 / 2), r1, r2, proof],
        ["preceding garbage", v.size1, v.size2, r1, r2, [garbage, ...proof]],
        ["trailing garbage", v.size1, v.size2, r1, r2, [...proof, garbage]],
        ["preceding root1", v.size1, v.size2, r1, r2, [r1, ...proof]],
        ["trailing root2", v.size1, v.size2, r1, r2, [...proof, r2]]
      ]
      if (v.size1 !== v.size2) bad.push(["swapped roots", v.size1, v.size2, r2, r1, proof], ["empty proof", v.size1, v.size2, r1, r2, []])
      if (proof.length > 0) bad.push(["truncated proof", v.size1, v.size2, r1, r2, proof.slice(0, -1)])
      for (let k = 0; k < proof.length; k++) bad.push([`modified proof @${k}`, v.size1, v.size2, r1, r2, flip(proof, k)])
      for (const [name, s1, s2, a, b, p] of bad) {
        // size1 ± 1 can land on another valid pair only when the roots match too: they do not here.
        expect(verifyConsistency(s1, s2, a, b, p), `${what}: ${name}`).toBe(false)
      }
    }
  })

  it("the in-memory definitions agree with the stored log on every proof up to 70 leaves", () => {
    const entries = Array.from({ length: 70 }, (_, i) => text(`m ${i}`))
    const leaves = entries.map(leafHash)
    const r = storage(buildLog(entries))
    for (let size = 1; size <= 70; size++) {
      expect(hex(run(treeHash(size, r)))).toBe(hex(merkleTreeHash(leaves, size)))
      for (let m = 0; m < size; m++) expect(run(proveInclusion(m, size, r)).map(hex)).toEqual(inclusionProof(leaves, m, size).map(hex))
      for (let m = 1; m <= size; m++) expect(run(proveConsistency(m, size, r)).map(hex)).toEqual(consistencyProof(leaves, m, size).map(hex))
    }
  })
})
