import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Fabric anchoring (docs/anchoring-fabric.md): where a Fabric batch lives (channel, chaincode), its
 * string batch id, the indexer's durable checkpoint (last processed block: number, last tx id, header
 * hash) and a log of processed blocks (one row per block: a block processed twice violates the key).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE anchor_batches
      ADD COLUMN channel         text,
      ADD COLUMN chaincode       text,
      -- Fabric: the batchId string passed to the chaincode (EVM uses chain_batch_id, the contract's counter)
      ADD COLUMN chain_batch_ref text`
  yield* sql`
    CREATE TABLE fabric_checkpoints (
      network_id    text PRIMARY KEY,
      block_number  bigint NOT NULL,
      tx_id         text,
      block_hash    text NOT NULL,
      updated_at    timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE fabric_blocks (
      network_id    text NOT NULL,
      block_number  bigint NOT NULL,
      block_hash    text NOT NULL,
      tx_count      integer NOT NULL,
      anchors       integer NOT NULL,
      processed_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, block_number)
    )`
  // The Fabric batcher of an environment claims QUEUED hybrid records (whose network_id is their EVM one).
  yield* sql`CREATE INDEX records_queued_hybrid ON records (environment, id) WHERE status = 'QUEUED' AND chain_type = 'hybrid'`
})
