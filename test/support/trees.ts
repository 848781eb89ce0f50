/**
 * Reference builds the tests hold the node's trees to, kept out of src/ (the node builds each tree once, its
 * stored levels: src/anchoring/merkle.ts `buildTreeLevels`, src/anchoring/recordLog.ts `buildRecordLogLevels`):
 * - `buildLogTree`: RFC 9162's tree by its definition (src/anchoring/rfc9162.ts has the rules), every leaf's proof;
 * - `buildRecordLog`: the RFC 9162 tree of a batch's record hashes, each record's proof as hex;
 * - `merkleProofFrom`, `logProofFrom`: a proof read straight from stored levels (src/anchoring/batchTrees.ts).
 */
import { Buffer } from "node:buffer"
import { hash } from "node:crypto"
import { logProofOffsets, merkleProofOf, merkleProofOffsets } from "../../src/anchoring/batchTrees.ts"
import { leafHashInto } from "../../src/anchoring/recordLog.ts"
import { logLeafOrder } from "../../src/anchoring/rfc9162.ts"
import { leafHash, nodeHash, split } from "../../src/tlog/hash.ts"

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

export interface RecordLog {
  /** 0x + 64 hex. */
  readonly root: `0x${string}`
  /** Per input hash: its leaf index and its inclusion proof, the sibling hashes from the leaf up as one hex string. */
  readonly entries: ReadonlyArray<{ readonly index: number; readonly proofHex: string }>
}

/**
 * The RFC 9162 tree of a batch's record hashes: leaf input = the 32 hash bytes, leaves in `logLeafOrder`
 * (ascending hash), and each hash's leaf index and proof: every node hashed once into one buffer, each record's
 * proof the concatenation of its siblings' hex. The node cuts with `buildRecordLogLevels`; this is the reference
 * those levels are held to (test/anchoring/batch-trees.test.ts).
 * @throws TypeError on an empty list or a hash that is not 64 hex characters.
 */
export function buildRecordLog(hashes: ReadonlyArray<string>): RecordLog {
  const n = hashes.length
  if (n === 0) throw new TypeError("buildRecordLog: at least one hash is required")
  const order = logLeafOrder(hashes)
  const size = 2 * n - 1
  const nodes = Buffer.allocUnsafe(size * 32)
  const left = new Int32Array(size)
  const right = new Int32Array(size)
  const scratch = Buffer.alloc(65)
  let next = 0
  // Pre-order ids: the root is node 0. Depth is log2(n), so recursion is fine.
  const build = (lo: number, hi: number): number => {
    const id = next++
    if (hi - lo === 1) {
      leafHashInto(hashes[order[lo]!]!, scratch, nodes, id * 32, "buildRecordLog")
      left[id] = -1
      return id
    }
    const mid = lo + split(hi - lo)
    const l = build(lo, mid)
    const r = build(mid, hi)
    left[id] = l
    right[id] = r
    scratch[0] = 1
    nodes.copy(scratch, 1, l * 32, l * 32 + 32)
    nodes.copy(scratch, 33, r * 32, r * 32 + 32)
    hash("sha256", scratch, "buffer").copy(nodes, id * 32)
    return id
  }
  build(0, n)
  const hex = nodes.toString("hex")
  const nodeHex = (id: number) => hex.substring(64 * id, 64 * id + 64)

  const entries = new Array<{ index: number; proofHex: string }>(n)
  const siblings: Array<number> = []
  for (let j = 0; j < n; j++) {
    // Down from the root to leaf j, noting the sibling at each level; the proof lists them from the leaf up.
    siblings.length = 0
    let id = 0
    let lo = 0
    let hi = n
    while (left[id] !== -1) {
      const mid = lo + split(hi - lo)
      if (j < mid) {
        siblings.push(right[id]!)
        id = left[id]!
        hi = mid
      } else {
        siblings.push(left[id]!)
        id = right[id]!
        lo = mid
      }
    }
    let proofHex = ""
    for (let s = siblings.length - 1; s >= 0; s--) proofHex += nodeHex(siblings[s]!)
    entries[order[j]!] = { index: j, proofHex }
  }
  return { root: `0x${nodeHex(0)}`, entries }
}

/** A proof of the first tree as the API shows it (0x + 64 hex each), from the stored levels. */
export const merkleProofFrom = (levels: Uint8Array, leafCount: number, position: number): Array<string> =>
  merkleProofOf((_, offset) => levels.subarray(offset, offset + 32), "", merkleProofOffsets(leafCount, position))

/** An RFC 9162 proof as `anchors.log_proof` stored it (the siblings concatenated), from the stored levels. */
export const logProofFrom = (levels: Uint8Array, leafCount: number, index: number): Uint8Array =>
  Buffer.concat(logProofOffsets(leafCount, index).map((offset) => levels.subarray(offset, offset + 32)))
