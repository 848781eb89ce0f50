// src/anchoring/rfc9162.ts against the RFC 6962 reference vectors.
//   npx vitest run test/anchoring/rfc9162.test.ts
//
// Vectors: github.com/transparency-dev/merkle (Apache-2.0), the Go reference of RFC 6962/9162 tree
// hashing: `testonly/constants.go` (LeafInputs, NodeHashes, RootHashes) and `proof/verify_test.go`
// (inclusionProofs, whose leaf numbers are 1-based there: index = leaf - 1). The same vectors are
// in certificate-transparency-go's merkletree tests.
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { buildLogTree, hashBytes, logLeafOrder, splitProof, toHex } from "../../src/anchoring/rfc9162.ts"
import { rootFromInclusionProof, verifyInclusion } from "../../src/tlog/check.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { buildRecordLog } from "../../src/anchoring/recordLog.ts"

const hashBytes0 = (h: string) => new Uint8Array(Buffer.from(h, "hex"))
const hd = (h: string) => new Uint8Array(Buffer.from(h, "hex"))

const LEAF_INPUTS = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map(hd)

// RootHashes()[1..8]: the roots of the trees of the first n leaf inputs.
const ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
]

// NodeHashes()[0]: the leaf hashes.
const LEAF_HASHES = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
  "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
  "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
  "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
  "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
  "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
  "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"
]

// proof/verify_test.go inclusionProofs (leaf made 0-based).
const INCLUSION = [
  { index: 0, size: 1, proof: [] },
  {
    index: 0,
    size: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
    ]
  },
  {
    index: 5,
    size: 8,
    proof: [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
    ]
  },
  { index: 2, size: 3, proof: ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"] },
  {
    index: 1,
    size: 5,
    proof: [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"
    ]
  }
]

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
