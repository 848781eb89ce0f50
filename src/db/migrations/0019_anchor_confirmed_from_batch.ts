import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An anchor is confirmed exactly when its batch is CONFIRMED (docs/design/per-batch-model.md, part 2),
 * so that is where it is read (`anchor_batches.state`), and confirming a batch no longer rewrites each
 * of its anchors (`UPDATE anchors SET confirmed = true WHERE batch_id = …`: one non-HOT row write per
 * record, half of what anchoring wrote per record after ingest).
 *
 * The two were always equal: a batch's anchors were set confirmed in the transaction that set it
 * CONFIRMED (or that joined records to a CONFIRMED batch), and a batch leaves CONFIRMED only by a drop
 * (reorg, chain reset), which deletes its anchors; a FAILED batch's anchors go to `failed_anchors` and
 * come back, unconfirmed, when it is mined after all (MINED).
 *
 * `anchors.confirmed` is dropped, not kept for old readers: kept, it would read false for every anchor
 * written from now on, a wrong answer rather than a missing one (as 0016 dropped `records.anchored_at`).
 * `anchord_event_anchor` (0012), the one SQL reader, is redefined first with the same signature, so
 * `anchord_anchor_confirmed` and the views `anchor_confirmed_events` / `all_events` read the batch too.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_event_anchor(a anchors, b anchor_batches) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object(
        'chainType', a.chain_type,
        'networkId', a.network_id,
        'batchId', CASE WHEN a.chain_type = 'evm' THEN to_jsonb(COALESCE(b.chain_batch_id, 0))
                        ELSE to_jsonb(COALESCE(b.chain_batch_ref, b.chain_batch_id::text, '')) END,
        'txHash', b.tx_hash,
        'blockNumber', CASE WHEN a.chain_type = 'evm' THEN to_jsonb(b.block_number) ELSE 'null'::jsonb END,
        'merkleRoot', b.merkle_root,
        'merkleProof', to_jsonb(a.merkle_proof),
        'anchoredAt', CASE WHEN b.state = 'CONFIRMED' AND b.anchored_at IS NOT NULL
                           THEN to_jsonb(to_char(b.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                           ELSE 'null'::jsonb END)
      || CASE WHEN a.chain_type = 'evm' AND b.contract_address IS NOT NULL THEN jsonb_build_object('contractAddress', b.contract_address) ELSE '{}'::jsonb END
      || CASE WHEN a.chain_type = 'evm' AND b.chain_id IS NOT NULL THEN jsonb_build_object('chainId', b.chain_id) ELSE '{}'::jsonb END
      || CASE WHEN a.chain_type = 'fabric' AND b.channel IS NOT NULL THEN jsonb_build_object('channel', b.channel) ELSE '{}'::jsonb END
      || CASE WHEN a.chain_type = 'fabric' AND b.chaincode IS NOT NULL THEN jsonb_build_object('chaincode', b.chaincode) ELSE '{}'::jsonb END
    $$`)
  yield* sql`ALTER TABLE anchors DROP COLUMN confirmed`
})
