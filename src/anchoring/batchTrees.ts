/**
 * A batch's two trees, stored once on its `anchor_batches` row, and every record's proofs
 * derived from them: the one place that knows the layout (docs/design/per-batch-model.md, section 3).
 *
 * Layout: 32 bytes per node, no header; the leaf count is the row's `leaf_count` (n).
 * - `merkle_levels`, the OpenZeppelin tree (./merkle.ts): its node array (node t's children 2t+1, 2t+2)
 *   reversed, so 2n-1 nodes with the leaves first (sorted ascending: leaf position p at byte 32 p), then
 *   the interior nodes from the deepest up, the root last. Node t is at byte 32 (2n-2-t).
 * - `log_levels`, the RFC 9162 tree (./recordLog.ts): its levels concatenated from the leaves up, level 0
 *   the n leaf hashes in log order, level k+1 the hashes of level k's pairs with an odd last node carried
 *   up as is (⌈s/2⌉ nodes from s), the root last.
 *
 * A record's anchor keeps its leaf position in the first tree (`anchors.merkle_index`; `leaf_index` is its
 * place in the cut, which clients see) and its `log_index`. Anchors cut by older nodes, before batches
 * stored their trees, keep their proofs in `merkle_proof` / `log_proof`, read as they are; a NULL proof is derived.
 */
import { Buffer } from "node:buffer"
import { Effect, Schema } from "effect"
import { type SqlClient, type SqlError, SqlSchema, type Statement } from "effect/sql"
import { rowDefects } from "../db/rows.ts"

/** A position outside the tree is a bug (an anchor without its proof nor its position): never a node read from elsewhere. */
const inRange = (leafCount: number, index: number) => {
  if (!Number.isSafeInteger(index) || index < 0 || index >= leafCount) throw new RangeError(`leaf ${index} of a tree of ${leafCount}`)
}

/** Byte offsets in `merkle_levels` of the proof of leaf position `position`: siblings from the leaf up (buildTree's order). */
export const merkleProofOffsets = (leafCount: number, position: number): Array<number> => {
  inRange(leafCount, position)
  const last = 2 * leafCount - 2
  const out: Array<number> = []
  let t = last - position
  while (t > 0) {
    // Odd nodes are left children (sibling t+1), even ones right (t-1).
    out.push((last - (t % 2 === 1 ? t + 1 : t - 1)) * 32)
    t = (t - 1) >> 1
  }
  return out
}

/** Byte offsets in `log_levels` of the inclusion proof of leaf `index`: the siblings that exist, from the leaf up. */
export const logProofOffsets = (leafCount: number, index: number): Array<number> => {
  inRange(leafCount, index)
  const out: Array<number> = []
  let from = 0
  let i = index
  for (let s = leafCount; s > 1; s = (s + 1) >> 1) {
    // The last node of an odd level has no sibling: it is carried up, and the proof skips the level.
    if ((i ^ 1) < s) out.push(from + (i ^ 1) * 32)
    from += s * 32
    i >>= 1
  }
  return out
}

/** A node as the API shows it: 0x + 64 hex (a view on the stored bytes, not a copy). */
const hexNode = (b: Uint8Array) => `0x${Buffer.from(b.buffer, b.byteOffset, 32).toString("hex")}`

export type Tree = "merkle" | "log"

/** A proof to derive: of which batch (its id and root: the cache key), which nodes. */
export interface NodesWanted {
  readonly batchId: string
  readonly merkleRoot: string
  readonly offsets: ReadonlyArray<number>
}

/**
 * Whole levels read lately, by tree and merkle root: content-addressed (the root fixes the batch's hashes, hence
 * both trees), so never stale, whichever database. A fan-out reads a batch's records in chunks of 128: the
 * batch's levels are read once, not once per chunk. Bounded by bytes.
 */
const cache = new Map<string, Uint8Array>()
let cachedBytes = 0
const CACHE_BYTES = 16 * 1024 * 1024
const remember = (key: string, levels: Uint8Array) => {
  if (levels.length > CACHE_BYTES / 4 || cache.has(key)) return
  cache.set(key, levels)
  cachedBytes += levels.length
  for (const [k, v] of cache) {
    if (cachedBytes <= CACHE_BYTES) break
    cache.delete(k)
    cachedBytes -= v.length
  }
}

/**
 * Below this many distinct nodes of one batch, the nodes are read as `substring`s (one record read: ~11 nodes,
 * a few TOAST chunks), above it the whole levels once (2 KB TOAST chunks hold 62 nodes: reading ~2n nodes
 * whole beats one index probe per node long before every node is wanted).
 */
const SLICE_LIMIT = 48

const SliceRow = Schema.Struct({ batchId: Schema.String, offset: Schema.Number, node: Schema.Uint8Array })
const LevelsRow = Schema.Struct({ batchId: Schema.String, levels: Schema.NullOr(Schema.Uint8Array) })

/** The statements reading one tree's stored nodes: slices of it, or its whole levels. */
const treeStatements = (sql: SqlClient.SqlClient, column: Statement.Fragment) => ({
  slices: SqlSchema.findAll({
    Request: Schema.Struct({ ids: Schema.String, offsets: Schema.String }),
    Result: SliceRow,
    execute: ({ ids, offsets }) =>
      sql`
            SELECT x.b::text AS batch_id, x.o AS "offset", substring(${column} FROM x.o + 1 FOR 32) AS node
            FROM unnest(string_to_array(${ids}, ',')::bigint[], string_to_array(${offsets}, ',')::int[]) AS x(b, o)
            JOIN anchor_batches b ON b.id = x.b`
  }),
  levels: SqlSchema.findAll({
    Request: Schema.String,
    Result: LevelsRow,
    execute: (ids) => sql`SELECT b.id::text AS batch_id, ${column} AS levels FROM anchor_batches b WHERE b.id = ANY (string_to_array(${ids}, ',')::bigint[])`
  })
})

/** The stored trees' nodes over the layer's client, its statements built once by the layer. */
export const batchTreeNodes = (sql: SqlClient.SqlClient) => {
  const statements = { merkle: treeStatements(sql, sql`b.merkle_levels`), log: treeStatements(sql, sql`b.log_levels`) }

  /**
   * The nodes wanted from each batch's stored tree: a function from (batch id, offset) to the node. Two statements
   * at most (slices, whole levels), whatever the number of batches.
   */
  const readNodes = (
    tree: Tree,
    wanted: ReadonlyArray<NodesWanted>
  ): Effect.Effect<(batchId: string, offset: number) => Uint8Array, SqlError.SqlError> =>
    Effect.gen(function*() {
      const q = statements[tree]
      const byBatch = new Map<string, { root: string; offsets: Set<number> }>()
      for (const w of wanted) {
        let entry = byBatch.get(w.batchId)
        if (entry === undefined) byBatch.set(w.batchId, entry = { root: w.merkleRoot, offsets: new Set() })
        for (const o of w.offsets) entry.offsets.add(o)
      }
      const whole = new Map<string, Uint8Array>()
      const sliced = new Map<string, Uint8Array>()
      const toSlice: Array<[string, number]> = []
      const toRead: Array<string> = []
      for (const [batchId, { offsets, root }] of byBatch) {
        const hit = cache.get(`${tree}:${root}`)
        if (hit !== undefined) whole.set(batchId, hit)
        else if (offsets.size <= SLICE_LIMIT) { for (const o of offsets) toSlice.push([batchId, o]) }
        else toRead.push(batchId)
      }
      if (toSlice.length > 0) {
        const rows = yield* rowDefects(q.slices({ ids: toSlice.map(([b]) => b).join(","), offsets: toSlice.map(([, o]) => o).join(",") }))
        for (const r of rows) sliced.set(`${r.batchId}:${r.offset}`, r.node)
      }
      if (toRead.length > 0) {
        const rows = yield* rowDefects(q.levels(toRead.join(",")))
        for (const r of rows) {
          if (r.levels === null) continue
          whole.set(r.batchId, r.levels)
          remember(`${tree}:${byBatch.get(r.batchId)!.root}`, r.levels)
        }
      }
      return (batchId: string, offset: number): Uint8Array => {
        const levels = whole.get(batchId)
        const node = levels !== undefined ? levels.subarray(offset, offset + 32) : sliced.get(`${batchId}:${offset}`)
        // A batch row always has the levels its proof-less anchors need (BatchStore.cutBatch writes both together).
        if (node === undefined || node.length !== 32) throw new Error(`batch ${batchId}: no stored ${tree} tree node at byte ${offset}`)
        return node
      }
    })

  return { readNodes }
}

/** A proof of the first tree as the API shows it, from what `readNodes` read. */
export const merkleProofOf = (node: (batchId: string, offset: number) => Uint8Array, batchId: string, offsets: ReadonlyArray<number>) =>
  offsets.map((o) => hexNode(node(batchId, o)))
