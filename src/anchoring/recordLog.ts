/**
 * The RFC 9162 tree of a batch's record hashes (./rfc9162.ts has the rules). The batch cut
 * (BatchStore.cutBatch) builds its levels (`buildRecordLogLevels`) and stores them on the batch; the
 * anchors store no proof (NULL in `anchors`), each is derived from those levels when read
 * (./batchTrees.ts). The tests hold those levels to a reference that builds each record's proof
 * (test/support/trees.ts `buildRecordLog`). Node-only (Buffer, node:crypto), like the cut itself.
 */
import { Buffer } from "node:buffer"
import { hash } from "node:crypto"
import { logLeafOrder } from "./rfc9162.ts"

/** RFC 9162's leaf hash, SHA-256(0x00 ‖ record hash), written at `offset` of `out` (`scratch`: 65 bytes of the caller's). */
export const leafHashInto = (h: string, scratch: Buffer, out: Buffer, offset: number, what: string) => {
  const body = h.length === 66 && h.startsWith("0x") ? h.slice(2) : h
  scratch[0] = 0
  if (body.length !== 64 || scratch.write(body, 1, 32, "hex") !== 32) {
    throw new TypeError(`${what}: expected 64 hex characters, got ${JSON.stringify(h)}`)
  }
  hash("sha256", scratch.subarray(0, 33), "buffer").copy(out, offset)
}

export interface RecordLogLevels {
  /** 0x + 64 hex. */
  readonly root: `0x${string}`
  /** Every node, level by level from the leaves up, in the layout of ./batchTrees.ts (`logProofOffsets`). */
  readonly levels: Buffer
  /** `indices[i]`: the leaf index of `hashes[i]`. */
  readonly indices: Int32Array
}

/**
 * The batch's RFC 9162 tree: its levels as stored on the batch
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
