// src/anchoring/rfc9162.ts against the RFC 6962 reference vectors.
//   npx vitest run test/anchoring/rfc9162.test.ts
//
// Vectors: github.com/transparency-dev/merkle (Apache-2.0), the Go reference of RFC 6962/9162 tree
// hashing: `testonly/constants.go` (LeafInputs, NodeHashes, RootHashes) and `proof/verify_test.go`
// (inclusionProofs, whose leaf numbers are 1-based there: index = leaf - 1). The same vectors are
// in certificate-transparency-go's merkletree tests.
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { hashBytes, logLeafOrder, splitProof, toHex } from "../../src/anchoring/rfc9162.ts"
import { rootFromInclusionProof, verifyInclusion } from "../../src/tlog/check.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { INCLUSION, LEAF_HASHES, LEAF_INPUTS, ROOTS } from "../tlog/vectors.ts"
import { buildLogTree, buildRecordLog } from "../support/trees.ts"

const hashBytes0 = (h: string) => new Uint8Array(Buffer.from(h, "hex"))
const hd = (h: string) => new Uint8Array(Buffer.from(h, "hex"))

describe("RFC 9162 tree: reference vectors", () => {
  it("leaf hashes", () => {
    expect(LEAF_INPUTS.map((l) => toHex(leafHash(l)))).toEqual(LEAF_HASHES)
  })

  it("roots of the trees of 1..8 leaves", () => {
    for (let n = 1; n <= 8; n++) expect(toHex(buildLogTree(LEAF_INPUTS.slice(0, n)).root), `size ${n}`).toBe(ROOTS[n - 1])
  })

  it("builds the published inclusion proofs, and they verify", () => {
    for (const v of INCLUSION) {
      const tree = buildLogTree(LEAF_INPUTS.slice(0, v.size))
      expect(tree.proofs[v.index]!.map(toHex), `${v.index}/${v.size}`).toEqual(v.proof)
      expect(verifyInclusion(v.index, v.size, hd(LEAF_HASHES[v.index]!), v.proof.map(hd), hd(ROOTS[v.size - 1]!))).toBe(true)
    }
  })

  it("every proof of every tree up to 8 leaves verifies, and corrupted ones do not (verify_test.go's probes)", () => {
    for (let n = 1; n <= 8; n++) {
      const tree = buildLogTree(LEAF_INPUTS.slice(0, n))
      const root = hd(ROOTS[n - 1]!)
      for (let i = 0; i < n; i++) {
        const leaf = hd(LEAF_HASHES[i]!)
        const proof = tree.proofs[i]!
        expect(verifyInclusion(i, n, leaf, proof, root), `${i}/${n}`).toBe(true)
        const probes: Array<[number, number, Uint8Array, ReadonlyArray<Uint8Array>, Uint8Array]> = [
          [i - 1, n, leaf, proof, root],
          [i + 1, n, leaf, proof, root],
          [i ^ 2, n, leaf, proof, root],
          [i, n * 2, leaf, proof, root],
          [i, Math.floor(n / 2), leaf, proof, root],
          [i, n, hd(LEAF_HASHES[(i + 1) % 8]!), proof, root],
          [i, n, leaf, proof, hd("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")],
          [i, n, leaf, [...proof, root], root],
          [i, n, leaf, [root, ...proof], root],
          ...proof.map((_, j): [number, number, Uint8Array, ReadonlyArray<Uint8Array>, Uint8Array] => {
            const bad = proof.map((p) => p.slice())
            bad[j]![0]! ^= 8
            return [i, n, leaf, bad, root]
          }),
          ...(proof.length > 0 ? [[i, n, leaf, proof.slice(0, -1), root] as [number, number, Uint8Array, ReadonlyArray<Uint8Array>, Uint8Array]] : [])
        ]
        for (const [pi, pn, pl, pp, pr] of probes) {
          // i ^ 2 may equal i's sibling shape; a probe identical to the original is no corruption.
          if (pi === i && pn === n && pl === leaf && pp === proof && pr === root) continue
          expect(verifyInclusion(pi, pn, pl, pp, pr), `probe ${pi}/${pn} of ${i}/${n}`).toBe(false)
        }
      }
    }
  })

  it("refuses an index out of range and malformed hashes", () => {
    expect(rootFromInclusionProof(1, 1, hd(LEAF_HASHES[0]!), [])).toBeUndefined()
    expect(rootFromInclusionProof(-1, 1, hd(LEAF_HASHES[0]!), [])).toBeUndefined()
    expect(rootFromInclusionProof(0, 2, hd(LEAF_HASHES[0]!), [new Uint8Array(31)])).toBeUndefined()
  })
})

describe("RFC 9162 tree of a batch's record hashes", () => {
  const hashes = Array.from({ length: 37 }, (_, i) => createHash("sha256").update(`r${i % 30}`).digest("hex"))

  it("orders leaves by hash, so the root depends only on the hashes (as the OpenZeppelin root)", () => {
    const a = buildRecordLog(hashes)
    const b = buildRecordLog([...hashes].reverse().map((h) => h.toUpperCase()))
    expect(a.root).toBe(b.root)
    const order = logLeafOrder(hashes)
    const sorted = order.map((i) => hashes[i]!)
    expect(sorted).toEqual([...hashes].sort())
    expect(a.root).toBe(`0x${toHex(buildLogTree(sorted.map(hashBytes)).root)}`)
  })

  it("each record's stored entry (index + concatenated proof) verifies, duplicates included", () => {
    const log = buildRecordLog(hashes)
    const indices = new Set<number>()
    hashes.forEach((h, i) => {
      const e = log.entries[i]!
      indices.add(e.index)
      expect(verifyInclusion(e.index, hashes.length, leafHash(hashBytes(h)), splitProof(hashBytes0(e.proofHex)), hashBytes(log.root))).toBe(true)
      // The same proof as the reference construction.
      expect(e.proofHex).toBe(buildLogTree(logLeafOrder(hashes).map((k) => hashBytes(hashes[k]!))).proofs[e.index]!.map(toHex).join(""))
    })
    expect(indices.size).toBe(hashes.length)
  })
})
