/**
 * The batches as the chains' writers and watchers read them: a network's open batches, and a batch by its
 * root (a live one, or the newest given up). Statements built once per layer (`batchReads`).
 */
import { Effect, Option, Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import type { Hex } from "./merkle.ts"
import { BatchRow } from "./model.ts"

/** The columns of a `BatchRow` (`batchRowOf`). */
export const batchColumns = (sql: SqlClient.SqlClient) =>
  sql`id::text AS id, network_id, merkle_root, leaf_count, state, attempts, nonce::text AS nonce, gas_limit::text AS gas_limit, tx_hash,
    raw_tx, tx_hashes, max_fee_per_gas::text AS max_fee_per_gas, max_priority_fee_per_gas::text AS max_priority_fee_per_gas,
    sent_at, chain_batch_id::text AS chain_batch_id, block_number::text AS block_number, block_hash, created_at, log_root`

/** The batches of a network still under way (PENDING, SENT, MINED), oldest first; rows to decode. */
export const selectOpenBatches = (sql: SqlClient.SqlClient, networkId: string) =>
  sql`SELECT ${batchColumns(sql)} FROM anchor_batches
      WHERE network_id = ${networkId} AND state IN ('PENDING', 'SENT', 'MINED') ORDER BY anchor_batches.id`
const statements = (sql: SqlClient.SqlClient) => ({
  findBatches: SqlSchema.findAll({
    Request: Schema.String,
    Result: BatchRow,
    execute: (networkId) => selectOpenBatches(sql, networkId)
  }),
  findBatchByRoot: SqlSchema.findOneOption({
    Request: Schema.Struct({ networkId: Schema.String, root: Schema.String, state: Schema.Literals(["live", "FAILED"]) }),
    Result: BatchRow,
    execute: ({ networkId, root, state }) =>
      state === "live"
        ? sql`
          SELECT ${batchColumns(sql)} FROM anchor_batches
          WHERE network_id = ${networkId} AND merkle_root = ${root} AND state NOT IN ('DROPPED', 'FAILED')`
        : sql`
          SELECT ${batchColumns(sql)} FROM anchor_batches
          WHERE network_id = ${networkId} AND merkle_root = ${root} AND state = 'FAILED'
          ORDER BY anchor_batches.id DESC LIMIT 1`
  })
})

/** The reads over the layer's client. */
export const batchReads = (sql: SqlClient.SqlClient) => {
  const q = statements(sql)

  const openBatches = Effect.fn("BatchStore.openBatches")(function*(networkId: string) {
    return yield* rowDefects(q.findBatches(networkId))
  })

  const findLiveBatchByRoot = Effect.fn("BatchStore.findLiveBatchByRoot")(function*(networkId: string, root: Hex) {
    return Option.getOrUndefined(yield* rowDefects(q.findBatchByRoot({ networkId, root, state: "live" })))
  })

  const findFailedBatchByRoot = Effect.fn("BatchStore.findFailedBatchByRoot")(function*(networkId: string, root: Hex) {
    return Option.getOrUndefined(yield* rowDefects(q.findBatchByRoot({ networkId, root, state: "FAILED" })))
  })

  return { openBatches, findLiveBatchByRoot, findFailedBatchByRoot }
}
