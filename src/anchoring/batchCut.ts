/**
 * Cutting a network's batch: up to `max` records claimed from the head of its queue (./batchQueue.ts), both
 * trees built over their hashes and stored on the batch (src/anchoring/batchTrees.ts), the batch and its
 * anchors inserted (the records then read BATCHING) and the queue's cursor moved, in one transaction. The
 * same leaves as a live batch join it. Statements built once per layer (`batchCutting`).
 */
import { Effect, Option, Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { annotateSampled } from "../tracing/attributes.ts"
import { fence } from "./Leadership.ts"
import { buildTreeLevels, type Hex } from "./merkle.ts"
import { buildRecordLogLevels } from "./recordLog.ts"
import { nextCursor, batchQueue } from "./batchQueue.ts"
import type { batchTransitions } from "./batchTransitions.ts"
import { AnchorChainType, BatchId, BatchMeta, BatchState, type Environment, IdRow } from "./model.ts"

export interface CutBatch {
  readonly batchId: string
  readonly root: Hex
  readonly leafCount: number
  /** The same leaves as a live batch: the records joined it. */
  readonly joined: boolean
}

/** A live batch the cut's records join; `hasLevels`: its trees are stored (a batch cut by an older node has none). */
const LiveBatchRow = Schema.Struct({ id: Schema.String, state: BatchState, hasLevels: Schema.Boolean })

const statements = (sql: SqlClient.SqlClient) => ({
  findLiveByRoot: SqlSchema.findOneOption({
    Request: Schema.Struct({ networkId: Schema.String, root: Schema.String }),
    Result: LiveBatchRow,
    execute: ({ networkId, root }) =>
      sql`
        SELECT id::text AS id, state, merkle_levels IS NOT NULL AS has_levels FROM anchor_batches
        WHERE network_id = ${networkId} AND merkle_root = ${root} AND state NOT IN ('DROPPED', 'FAILED')
        FOR UPDATE`
  }),
  insertBatch: SqlSchema.findOne({
    Request: Schema.Struct({
      networkId: Schema.String,
      root: Schema.String,
      leafCount: Schema.Number,
      logRoot: Schema.String,
      newest: Schema.String,
      meta: BatchMeta,
      merkleLevels: Schema.Uint8Array,
      logLevels: Schema.Uint8Array
    }),
    Result: IdRow,
    execute: ({ leafCount, logLevels, logRoot, merkleLevels, meta, networkId, newest, root }) =>
      meta.chainType === "fabric"
        ? sql`
            INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, channel, chaincode, log_root, max_insert_xid,
              merkle_levels, log_levels)
            VALUES (${networkId}, 'fabric', ${root}, ${leafCount}, 'PENDING', ${meta.channel}, ${meta.chaincode}, ${logRoot}, ${newest}::numeric,
              ${merkleLevels}, ${logLevels})
            RETURNING id::text AS id`
        : sql`
            INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address, log_root, max_insert_xid,
              merkle_levels, log_levels)
            VALUES (${networkId}, 'evm', ${root}, ${leafCount}, 'PENDING', ${meta.chainId}, ${meta.contractAddress.toLowerCase()}, ${logRoot},
              ${newest}::numeric, ${merkleLevels}, ${logLevels})
            RETURNING id::text AS id`
  }),
  // Records joining a live batch raise its newest record (a NULL, unknown, stays so).
  raiseNewest: SqlSchema.void({
    Request: Schema.Struct({ batchId: BatchId, newest: Schema.String }),
    execute: ({ batchId, newest }) =>
      sql`
          UPDATE anchor_batches SET max_insert_xid = ${newest}::numeric WHERE id = ${batchId} AND max_insert_xid < ${newest}::numeric`
  }),
  /**
   * A batch without stored trees (cut by an older node) that records join gets them: the joining anchors carry no
   * proofs. The same root, so the same hashes, so the same trees.
   */
  storeLevels: SqlSchema.void({
    Request: Schema.Struct({ batchId: BatchId, merkleLevels: Schema.Uint8Array, logLevels: Schema.Uint8Array }),
    execute: ({ batchId, logLevels, merkleLevels }) =>
      sql`
          UPDATE anchor_batches SET merkle_levels = ${merkleLevels}, log_levels = ${logLevels} WHERE id = ${batchId} AND merkle_levels IS NULL`
  }),
  /**
   * The cut's anchors, as one JSON document (`anchorsJson`, built by `cutBatch` from the trees it just
   * computed): a cut of thousands of records does no per-anchor schema work. No proofs: each record's leaf
   * positions in its batch's stored trees (src/anchoring/batchTrees.ts).
   */
  insertAnchors: SqlSchema.void({
    Request: Schema.Struct({ batchId: BatchId, networkId: Schema.String, chainType: AnchorChainType, anchorsJson: Schema.String }),
    execute: ({ anchorsJson, batchId, chainType, networkId }) =>
      sql`
        INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_index, log_index)
        SELECT x.r, ${networkId}, ${chainType}, ${batchId}, x.i, x.mi, x.li
        FROM jsonb_to_recordset(${anchorsJson}::jsonb) AS x(r text, i int, mi int, li int)`
  })
})

/** `queueState` and `cutBatch` over the layer's client; `completeRecords` announces the records that join a confirmed batch. */
export const batchCutting = (sql: SqlClient.SqlClient, transitions: ReturnType<typeof batchTransitions>) => {
  const q = statements(sql)
  const queue = batchQueue(sql)
  // Networks whose cursor row exists (it is never deleted): checked once per process.
  const withCursor = new Set<string>()
  /**
   * The network's cursor, made at its first look: at its first queued record (one walk of the index,
   * once), never past a transaction in flight.
   */
  const ensureCursor = (networkId: string, hybridEnvironment: Environment | undefined) =>
    withCursor.has(networkId)
      ? Effect.void
      : queue.ensureCursor(networkId, hybridEnvironment).pipe(Effect.tap(() => Effect.sync(() => withCursor.add(networkId))))

  const queueState = Effect.fn("BatchStore.queueState")(function*(networkId: string, max: number, hybridEnvironment?: Environment) {
    yield* ensureCursor(networkId, hybridEnvironment)
    const from = yield* queue.readCursor(networkId, false)
    return yield* queue.look({ networkId, max, hybridEnvironment, from })
  })

  const cutBatch = Effect.fn("BatchStore.cutBatch")(function*(
    networkId: string,
    max: number,
    meta: BatchMeta,
    hybridEnvironment?: Environment
  ) {
    return yield* sql.withTransaction(Effect.gen(function*() {
      // Fencing: a leader that lost its lock (paused past its lease) cuts nothing (Leadership.ts).
      yield* fence(sql)
      yield* ensureCursor(networkId, hybridEnvironment)
      // The cursor locked first: a drop moving it back waits for this cut, or this cut sees the drop.
      const from = yield* queue.readCursor(networkId, true)
      // Nothing locked: a record is claimed by its anchor (primary key (record_id, network_id)).
      const claimed = yield* queue.claim({ networkId, max, hybridEnvironment, from })
      if (claimed.length === 0) return undefined
      const next = nextCursor(claimed, max, claimed[0]!.horizon)
      if (next.xid !== from.xid || next.id !== from.id) {
        yield* queue.moveCursor(networkId, next)
      }
      // Both trees stored once on the batch, their levels (src/anchoring/batchTrees.ts): proofs are derived when read.
      const tree = buildTreeLevels(claimed.map((r) => r.hash))
      // The batch's second tree, RFC 9162 over the same hashes (COSE Receipts): its root goes on chain in
      // the same transaction. Sorted leaves, so a joined batch (below) has the same log root too.
      const log = buildRecordLogLevels(claimed.map((r) => r.hash))
      // The newest record of the cut (anchor_batches.max_insert_xid: how the status filters
      // tell a recent batch, src/anchoring/recordState.ts).
      const newest = claimed.reduce((m, r) => BigInt(r.xid) > m ? BigInt(r.xid) : m, 0n).toString()
      // The same leaves as a live batch give the same root: the records join that batch (same proofs).
      const existing = Option.getOrUndefined(yield* rowDefects(q.findLiveByRoot({ networkId, root: tree.root })))
      const batchId = existing !== undefined
        ? existing.id
        : (yield* rowDefects(q.insertBatch({
          networkId,
          root: tree.root,
          leafCount: claimed.length,
          logRoot: log.root,
          newest,
          meta,
          merkleLevels: tree.levels,
          logLevels: log.levels
        }))).id
      if (existing !== undefined) yield* rowDefects(q.raiseNewest({ batchId, newest }))
      if (existing !== undefined && !existing.hasLevels) {
        yield* rowDefects(q.storeLevels({ batchId, merkleLevels: tree.levels, logLevels: log.levels }))
      }
      const anchorsJson = JSON.stringify(claimed.map((r, i) => ({ r: r.id, i, mi: tree.positions[i], li: log.indices[i] })))
      yield* rowDefects(q.insertAnchors({ batchId, networkId, chainType: meta.chainType, anchorsJson }))
      if (existing?.state === "CONFIRMED") {
        yield* transitions.completeRecords(batchId, claimed.map((r) => r.id))
      }
      return { batchId, root: tree.root, leafCount: claimed.length, joined: existing !== undefined } satisfies CutBatch
    })).pipe(Effect.tap((cut) =>
      cut === undefined ?
        Effect.void
        : annotateSampled(() => ({ "anchord.batch_id": cut.batchId, "anchord.network_id": networkId, "anchord.record_count": cut.leafCount }))
    ))
  })

  return { queueState, cutBatch }
}
