import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Anchoring: batches (one Merkle tree sent to one network), one anchor row per (record, network)
 * with the record's proof, and the chain watchers' cursors.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE anchor_batches (
      id                       bigserial PRIMARY KEY,
      network_id               text NOT NULL,
      chain_type               text NOT NULL CHECK (chain_type IN ('evm', 'fabric')),
      merkle_root              text NOT NULL,
      leaf_count               integer NOT NULL CHECK (leaf_count > 0),
      -- PENDING: persisted, not sent; SENT: a signed tx is stored (and broadcast); MINED: seen in a block;
      -- CONFIRMED: at the configured depth; DROPPED: reorganised out / abandoned (records re-queued); FAILED
      state                    text NOT NULL CHECK (state IN ('PENDING', 'SENT', 'MINED', 'CONFIRMED', 'DROPPED', 'FAILED')),
      attempts                 integer NOT NULL DEFAULT 0,
      chain_id                 bigint,
      contract_address         text,
      nonce                    bigint,
      gas_limit                bigint,
      tx_hash                  text,
      raw_tx                   text,
      -- every hash sent for this batch (replacements share the nonce; any of them may be mined)
      tx_hashes                text[] NOT NULL DEFAULT '{}',
      max_fee_per_gas          numeric(78),
      max_priority_fee_per_gas numeric(78),
      sent_at                  timestamptz,
      chain_batch_id           bigint,
      block_number             bigint,
      block_hash               text,
      anchored_at              timestamptz,
      gas_used                 bigint,
      last_error               text,
      created_at               timestamptz NOT NULL DEFAULT now(),
      updated_at               timestamptz NOT NULL DEFAULT now()
    )`
  // A root is anchored once per network (the contract enforces it too).
  yield* sql`CREATE UNIQUE INDEX anchor_batches_root ON anchor_batches (network_id, merkle_root) WHERE state NOT IN ('DROPPED', 'FAILED')`
  yield* sql`CREATE INDEX anchor_batches_open ON anchor_batches (network_id, id) WHERE state IN ('PENDING', 'SENT', 'MINED')`
  yield* sql`
    CREATE TABLE anchors (
      record_id     text NOT NULL REFERENCES records (id),
      network_id    text NOT NULL,
      chain_type    text NOT NULL CHECK (chain_type IN ('evm', 'fabric')),
      batch_id      bigint NOT NULL REFERENCES anchor_batches (id),
      leaf_index    integer NOT NULL,
      merkle_proof  text[] NOT NULL,
      confirmed     boolean NOT NULL DEFAULT false,
      PRIMARY KEY (record_id, network_id)
    )`
  yield* sql`CREATE INDEX anchors_batch ON anchors (batch_id)`
  yield* sql`
    CREATE TABLE chain_cursors (
      network_id    text PRIMARY KEY,
      block_number  bigint NOT NULL,
      block_hash    text NOT NULL,
      updated_at    timestamptz NOT NULL DEFAULT now()
    )`
})
