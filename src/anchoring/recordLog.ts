/**
 * The RFC 9162 tree of a batch's record hashes (./rfc9162.ts has the rules). The batch cut
 * (BatchStore.cutBatch) builds its levels (`buildRecordLogLevels`) and stores them on the batch; the
 * anchors store no proof (NULL in `anchors`), each is derived from those levels when read
 * (./batchTrees.ts). `buildRecordLog`, every node hashed once into one buffer and each record's proof
 * the concatenation of its siblings' hex, is the reference those levels are held to.
 * Node-only (Buffer, node:crypto), like the cut itself.
 */
import { Buffer } from "node:buffer"
import { hash } from "node:crypto"
import { split } from "../tlog/hash.ts"
import { logLeafOrder } from "./rfc9162.ts"

export interface RecordLog {
  /** 0x + 64 hex. */
  readonly root: `0x${string}`
  /** Per input hash: its leaf index and its inclusion proof, the sibling hashes from the leaf up as one hex string. */
  readonly entries: ReadonlyArray<{ readonly index: number; readonly proofHex: string }>
}

/** RFC 9162's leaf hash, SHA-256(0x00 ‖ record hash), written at `offset` of `out` (`scratch`: 65 bytes of the caller's). */
const leafHashInto = (h: string, scratch: Buffer, out: Buffer, offset: number, what: string) => {
  const body = h.length === 66 && h.startsWith("0x") ? h.slice(2) : h
  scratch[0] = 0
  if (body.length !== 64 || scratch.write(body, 1, 32, "hex") !== 32) {
    throw new TypeError(`${what}: expected 64 hex characters, got ${JSON.stringify(h)}`)
  }
  hash("sha256", scratch.subarray(0, 33), "buffer").copy(out, offset)
}

/**
 * The RFC 9162 tree of a batch's record hashes: leaf input = the 32 hash bytes, leaves in `logLeafOrder`
 * (ascending hash), and each hash's leaf index and proof. The node cuts with `buildRecordLogLevels`;
 * this is the reference those levels are held to (test/anchoring/batch-trees.test.ts).
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

export interface RecordLogLevels {
  /** 0x + 64 hex. */
  readonly root: `0x${string}`
  /** Every node, level by level from the leaves up, in the layout of ./batchTrees.ts (`logProofOffsets`). */
  readonly levels: Buffer
  /** `indices[i]`: the leaf index of `hashes[i]` (as `buildRecordLog`'s `entries[i].index`). */
  readonly indices: Int32Array
}

/**
 * The same tree as `buildRecordLog`, without the proofs: its levels as stored on the batch
 * (`anchor_batches.log_levels`), built bottom-up — pairs hashed, an odd last node carried up
 * unhashed, which gives RFC 9162's tree (its split at the largest power of two below n is that pairing;
 * test/anchoring/batch-trees.test.ts holds the two equal) — and each input's leaf index.
 * @throws TypeError on an empty list or a hash that is not 64 hex characters.
 */
export function buildRecordLogLevels(hashes: ReadonlyArray<string>): RecordLogLevels {
  const n = hashes.length
  if (n === 0) throw new TypeError("buildRecordLogLevels: at least one hash is required")
  const order = logLeafOrder(hashes)
  let total = 0
  for (let s = n;; s = (s + 1) >> 1) {
    total += s
    if (s === 1) break
  }
  const levels = Buffer.allocUnsafe(total * 32)
  const scratch = Buffer.alloc(65)
  const indices = new Int32Array(n)
  for (let j = 0; j < n; j++) {
    leafHashInto(hashes[order[j]!]!, scratch, levels, j * 32, "buildRecordLogLevels")
    indices[order[j]!] = j
  }
  scratch[0] = 1
  let from = 0
  for (let s = n; s > 1; s = (s + 1) >> 1) {
    const to = from + s * 32
    for (let i = 0; i + 1 < s; i += 2) {
      levels.copy(scratch, 1, from + i * 32, from + i * 32 + 64)
      hash("sha256", scratch, "buffer").copy(levels, to + (i >> 1) * 32)
    }
    if (s % 2 === 1) levels.copy(levels, to + ((s - 1) >> 1) * 32, from + (s - 1) * 32, from + s * 32)
    from = to
  }
  return { root: `0x${levels.toString("hex", from, from + 32)}`, levels, indices }
}
