import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What a FAILED batch held: its anchors rows, moved here when the batch is given up. A transaction
 * given up after its last replacement can still be mined later (it stays in the pools); the EVM watcher
 * then finds the batch by its root and moves these rows back (docs/anchoring-evm.md, "Given up, mined
 * after all").
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE failed_anchors (
      batch_id      bigint NOT NULL REFERENCES anchor_batches (id),
      record_id     text NOT NULL REFERENCES records (id),
      network_id    text NOT NULL,
      chain_type    text NOT NULL CHECK (chain_type IN ('evm', 'fabric')),
      leaf_index    integer NOT NULL,
      merkle_proof  text[] NOT NULL,
      PRIMARY KEY (batch_id, record_id)
    )`
})
