/**
 * Every database statement of anchoring: cutting batches, the writer's tx bookkeeping, the
 * watcher's cursor, confirmation / reorg / failure with their outbox events in the same transaction.
 * SqlError becomes a defect here (the loops log it and try again on their next tick).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { buildTree, type Hex } from "../evm/merkle.ts"

export type BatchState = "PENDING" | "SENT" | "MINED" | "CONFIRMED" | "DROPPED" | "FAILED"

export interface BatchRow {
  readonly id: string
  readonly networkId: string
  readonly merkleRoot: Hex
  readonly leafCount: number
  readonly state: BatchState
  readonly attempts: number
  readonly nonce: string | null
  readonly gasLimit: string | null
  readonly txHash: Hex | null
  readonly rawTx: Hex | null
  readonly txHashes: ReadonlyArray<Hex>
  readonly maxFeePerGas: string | null
  readonly maxPriorityFeePerGas: string | null
  readonly sentAt: Date | null
  readonly chainBatchId: string | null
  readonly blockNumber: string | null
  readonly blockHash: Hex | null
  readonly createdAt: Date
}

export interface Cursor {
  readonly blockNumber: bigint
  readonly blockHash: Hex
}

export interface MinedFacts {
  readonly txHash: Hex
  readonly chainBatchId: bigint
  readonly blockNumber: bigint
  readonly blockHash: Hex
  readonly anchoredAt: Date
  readonly gasUsed: bigint | null
}

/** Where a batch goes: an EVM contract, or a Fabric channel + chaincode. */
export type BatchMeta =
  | { readonly chainType?: "evm"; readonly chainId: number; readonly contractAddress: string }
  | { readonly chainType: "fabric"; readonly channel: string; readonly chaincode: string }

/** A Fabric anchor seen in a committed block by the indexer (a VALID transaction's `Anchored` event). */
export interface FabricCommittedAnchor {
  readonly root: string
  readonly txId: string
  readonly batchRef: string
  readonly anchoredAt: Date
}

export interface FabricCheckpoint {
  readonly blockNumber: bigint
  readonly txId: string | null
  readonly blockHash: string
}

/** `{ id, hash }` rows of the records cut into one batch, in leaf (input) order. */
interface Claimed {
  readonly id: string
  readonly hash: string
}

/**
 * One anchor of an `anchor.confirmed` payload (`x` = anchors row, `y` = its batch), as the webhook
 * renderer reads it: EVM `batchId` is the contract's counter with `contractAddress` + `chainId`; Fabric
 * `batchId` is the string given to the chaincode, `txHash` the raw tx id, `blockNumber` null (seed; the
 * block stays in the proof bundle), with `channel` + `chaincode`.
 */
const anchorJson = (x: string, y: string) => `CASE WHEN ${y}.id IS NULL THEN NULL WHEN ${x}.chain_type = 'fabric' THEN jsonb_build_object(
    'chainType', 'fabric', 'networkId', ${x}.network_id, 'batchId', ${y}.chain_batch_ref, 'txHash', ${y}.tx_hash,
    'blockNumber', NULL, 'merkleRoot', ${y}.merkle_root, 'merkleProof', to_jsonb(${x}.merkle_proof),
    'anchoredAt', to_char(${y}.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'channel', ${y}.channel, 'chaincode', ${y}.chaincode)
  ELSE jsonb_build_object(
    'chainType', ${x}.chain_type, 'networkId', ${x}.network_id, 'batchId', ${y}.chain_batch_id, 'txHash', ${y}.tx_hash,
    'blockNumber', ${y}.block_number, 'blockHash', ${y}.block_hash, 'merkleRoot', ${y}.merkle_root,
    'merkleProof', to_jsonb(${x}.merkle_proof),
    'anchoredAt', to_char(${y}.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'contractAddress', ${y}.contract_address, 'chainId', ${y}.chain_id) END`

const eventId = (alias: string) => `'evt_' || substr(md5(random()::text || clock_timestamp()::text || ${alias}), 1, 24)`

export class AnchorStore extends Context.Service<AnchorStore, {
  /**
   * QUEUED records of the network lacking its anchor; with `hybridEnvironment`, also the QUEUED hybrid
   * records of that environment (their `network_id` is the EVM one; this is their Fabric network).
   */
  readonly queueState: (networkId: string, max: number, hybridEnvironment?: "test" | "live") => Effect.Effect<{ readonly count: number; readonly oldest: Date | null }>
  /** Claims up to `max` QUEUED records, builds the tree, persists batch + proofs, records → BATCHING. */
  readonly cutBatch: (networkId: string, max: number, meta: BatchMeta, hybridEnvironment?: "test" | "live") => Effect.Effect<
    { readonly batchId: string; readonly root: Hex; readonly leafCount: number; readonly joined: boolean } | undefined
  >
  readonly openBatches: (networkId: string) => Effect.Effect<ReadonlyArray<BatchRow>>
  readonly markSent: (batchId: string, tx: {
    nonce: number; gas: bigint; txHash: Hex; rawTx: Hex; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; bump: boolean
  }) => Effect.Effect<void>
  readonly markAdopted: (batchId: string) => Effect.Effect<void>
  readonly resetToPending: (batchId: string, error: string) => Effect.Effect<void>
  readonly noteError: (batchId: string, error: string) => Effect.Effect<void>
  readonly findLiveBatchByRoot: (networkId: string, root: Hex) => Effect.Effect<BatchRow | undefined>
  readonly markMined: (batchId: string, facts: MinedFacts) => Effect.Effect<void>
  /** MINED → CONFIRMED; anchors confirmed; records whose required anchors are all confirmed → ANCHORED + events. */
  readonly confirm: (batchId: string) => Effect.Effect<number>
  /** Reorganised out / abandoned: batch DROPPED, its anchors deleted, BATCHING records → QUEUED. */
  readonly drop: (batchId: string, reason: string) => Effect.Effect<number>
  /** Retries exhausted: batch FAILED, records → FAILED + anchor.failed events; its anchors kept in failed_anchors. */
  readonly fail: (batchId: string, reason: string) => Effect.Effect<number>
  /** The newest FAILED batch of the network with this root (`revive` checks that no live batch has it). */
  readonly findFailedBatchByRoot: (networkId: string, root: Hex) => Effect.Effect<BatchRow | undefined>
  /**
   * A FAILED batch whose transaction was mined after all: batch → MINED with the facts, its anchors back
   * from failed_anchors, its records still FAILED → BATCHING (confirmation then takes them to ANCHORED,
   * with anchor.confirmed events). The number of records revived; undefined when the batch was not
   * FAILED any more or a live batch has its root.
   */
  readonly revive: (batchId: string, facts: MinedFacts) => Effect.Effect<number | undefined>
  readonly cursor: (networkId: string) => Effect.Effect<Cursor | undefined>
  readonly saveCursor: (networkId: string, cursor: Cursor) => Effect.Effect<void>
  /** Dev chain (or dev peer) reset: every batch of the network is dropped, cursor / checkpoint forgotten. */
  readonly forgetNetwork: (networkId: string) => Effect.Effect<number>
  /** Fabric: the signed transaction (tx id + prepared transaction bytes) is stored before it is submitted. */
  readonly markFabricSent: (batchId: string, tx: { readonly txId: string; readonly envelope: string }) => Effect.Effect<void>
  /** Fabric: the writer saw its transaction committed VALID (the indexer confirms it from the block). */
  readonly markFabricCommitted: (batchId: string, facts: {
    readonly txId: string; readonly blockNumber: bigint; readonly batchRef: string; readonly anchoredAt: Date
  }) => Effect.Effect<void>
  readonly fabricCheckpoint: (networkId: string) => Effect.Effect<FabricCheckpoint | undefined>
  /** Fabric: an adopted anchor whose block the indexer had passed before the batch existed: MINED → CONFIRMED. */
  readonly applyFabricAdopted: (batchId: string, blockHash: string) => Effect.Effect<number>
  /**
   * Fabric indexer, one transaction per block: the block is logged (once: a second time violates the
   * key and rolls everything back), every live batch whose root is anchored in it is CONFIRMED with
   * its records (events), and the checkpoint moves to this block.
   */
  readonly applyFabricBlock: (networkId: string, block: {
    readonly number: bigint; readonly hash: string; readonly lastTxId: string | null; readonly txCount: number
  }, anchors: ReadonlyArray<FabricCommittedAnchor>) => Effect.Effect<{ readonly batches: number; readonly records: number }>
}>()("anchord/batching/AnchorStore") {
  static readonly layer = Layer.effect(
    AnchorStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const batchCols = sql`id::text AS id, network_id, merkle_root, leaf_count, state, attempts, nonce::text AS nonce, gas_limit::text AS gas_limit, tx_hash,
        raw_tx, tx_hashes, max_fee_per_gas::text AS max_fee_per_gas, max_priority_fee_per_gas::text AS max_priority_fee_per_gas,
        sent_at, chain_batch_id::text AS chain_batch_id, block_number::text AS block_number, block_hash, created_at`

      /**
       * The anchors a record needs (SPEC 4): one EVM anchor; a hybrid record an EVM and a Fabric one.
       * A record stays QUEUED until every required anchor is in a batch (each batcher claims QUEUED
       * records lacking its own anchor), BATCHING until all are confirmed, then ANCHORED.
       */
      const claimScope = (networkId: string, hybridEnvironment: "test" | "live" | undefined) =>
        hybridEnvironment === undefined
          ? sql`r.network_id = ${networkId}`
          : sql`(r.network_id = ${networkId} OR (r.chain_type = 'hybrid' AND r.environment = ${hybridEnvironment}))`

      const requiredAnchorsExist = sql`(r.chain_type <> 'hybrid' OR (
        EXISTS (SELECT 1 FROM anchors e WHERE e.record_id = r.id AND e.chain_type = 'evm') AND
        EXISTS (SELECT 1 FROM anchors f WHERE f.record_id = r.id AND f.chain_type = 'fabric')))`

      /** Records of the batch reaching ANCHORED when all their required anchors are confirmed (SPEC 4). */
      const completeRecords = (batchId: string) =>
        sql<{ n: number }>`
          WITH done AS (
            UPDATE records r SET status = 'ANCHORED', anchored_at = b.anchored_at, updated_at = now()
            FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
            WHERE a.batch_id = ${batchId} AND a.record_id = r.id AND r.status IN ('QUEUED', 'BATCHING')
              AND a.confirmed
              AND NOT EXISTS (SELECT 1 FROM anchors o WHERE o.record_id = r.id AND NOT o.confirmed)
              AND (r.chain_type <> 'hybrid' OR (
                EXISTS (SELECT 1 FROM anchors e WHERE e.record_id = r.id AND e.chain_type = 'evm' AND e.confirmed) AND
                EXISTS (SELECT 1 FROM anchors f WHERE f.record_id = r.id AND f.chain_type = 'fabric' AND f.confirmed)))
            RETURNING r.id, r.account_id, r.hash, r.network_id, r.chain_type, r.deleted_at, b.anchored_at
          ), ev AS (
            -- Top level: the record's primary anchor (its network_id; the EVM one for hybrid records), its
            -- anchoredAt included (a hybrid record completed by its Fabric anchor became ANCHORED at the Fabric
            -- time, which is dualAnchor's); a hybrid record's other anchor in dualAnchor; every anchor in anchors.
            INSERT INTO events (event_id, account_id, record_id, kind, payload)
            SELECT ${sql.unsafe(eventId("done.id"))}, done.account_id, done.id, 'anchor.confirmed',
              COALESCE(${sql.unsafe(anchorJson("pa", "pb"))}, jsonb_build_object('chainType', done.chain_type))
              || jsonb_build_object('recordId', done.id, 'hash', done.hash, 'status', 'ANCHORED', 'recordChainType', done.chain_type,
                'networkId', done.network_id,
                'anchoredAt', to_char(COALESCE(pb.anchored_at, done.anchored_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'anchors', (SELECT jsonb_agg(${sql.unsafe(anchorJson("x", "y"))} ORDER BY x.chain_type)
                  FROM anchors x JOIN anchor_batches y ON y.id = x.batch_id WHERE x.record_id = done.id))
              || COALESCE((SELECT jsonb_build_object('dualAnchor', ${sql.unsafe(anchorJson("sx", "sy"))})
                  FROM anchors sx JOIN anchor_batches sy ON sy.id = sx.batch_id
                  WHERE done.chain_type = 'hybrid' AND sx.record_id = done.id AND sx.network_id <> done.network_id
                  ORDER BY sx.chain_type LIMIT 1), '{}'::jsonb)
            FROM done
              LEFT JOIN anchors pa ON pa.record_id = done.id AND pa.network_id = done.network_id
              LEFT JOIN anchor_batches pb ON pb.id = pa.batch_id
            -- A soft-deleted record anchored again (its dev chain was reset) was announced already:
            -- its owner deleted it since, so the re-anchoring is silent (docs/dev-chain.md).
            WHERE done.deleted_at IS NULL
              OR NOT EXISTS (SELECT 1 FROM events pe WHERE pe.record_id = done.id AND pe.kind = 'anchor.confirmed')
            RETURNING 1
          )
          SELECT count(*)::int AS n FROM ev`.pipe(Effect.map((rows) => rows[0]?.n ?? 0))

      /**
       * Hybrid records of the batch, locked before its anchors are marked confirmed: two networks confirming
       * the two anchors of one record at the same time would otherwise each see the other's anchor still
       * unconfirmed (READ COMMITTED snapshots) and neither would complete the record.
       */
      const lockHybridRecords = (batchId: string) =>
        sql`SELECT 1 FROM records r JOIN anchors a ON a.record_id = r.id
            WHERE a.batch_id = ${batchId} AND r.chain_type = 'hybrid' ORDER BY r.id FOR UPDATE OF r`

      const orDie = <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.orDie(e)

      /** The columns a mined transaction sets on its batch (`markMined`, and `revive` of a given-up batch). */
      const minedColumns = (f: MinedFacts) => sql`
        tx_hash = ${f.txHash}, chain_batch_id = ${f.chainBatchId.toString()}::bigint,
        block_number = ${f.blockNumber.toString()}::bigint, block_hash = ${f.blockHash}, anchored_at = ${f.anchoredAt},
        gas_used = COALESCE(${f.gasUsed === null ? null : f.gasUsed.toString()}::bigint, gas_used),
        tx_hashes = CASE WHEN ${f.txHash}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${f.txHash}::text) END`

      return AnchorStore.of({
        queueState: (networkId, max, hybridEnvironment) =>
          sql<{ count: number; oldest: Date | null }>`
            SELECT count(*)::int AS count, min(created_at) AS oldest FROM (
              SELECT r.created_at FROM records r WHERE ${claimScope(networkId, hybridEnvironment)} AND r.status = 'QUEUED'
                AND NOT EXISTS (SELECT 1 FROM anchors a WHERE a.record_id = r.id AND a.network_id = ${networkId})
              ORDER BY r.id LIMIT ${max}
            ) q`.pipe(Effect.map((rows) => rows[0] ?? { count: 0, oldest: null }), orDie),

        cutBatch: (networkId, max, meta, hybridEnvironment) =>
          sql.withTransaction(Effect.gen(function*() {
            const chainType = meta.chainType === "fabric" ? "fabric" : "evm"
            const claimed = yield* sql<Claimed>`
              SELECT r.id, r.hash FROM records r
              WHERE ${claimScope(networkId, hybridEnvironment)} AND r.status = 'QUEUED'
                AND NOT EXISTS (SELECT 1 FROM anchors a WHERE a.record_id = r.id AND a.network_id = ${networkId})
              ORDER BY r.id LIMIT ${max}
              FOR UPDATE OF r SKIP LOCKED`
            if (claimed.length === 0) return undefined
            const tree = buildTree(claimed.map((r) => r.hash))
            // The same leaves as a live batch give the same root: the records join that batch (same proofs).
            const existing = yield* sql<{ id: string; state: BatchState }>`
              SELECT id::text AS id, state FROM anchor_batches
              WHERE network_id = ${networkId} AND merkle_root = ${tree.root} AND state NOT IN ('DROPPED', 'FAILED')
              FOR UPDATE`
            const batchId = existing.length > 0
              ? existing[0].id
              : meta.chainType === "fabric"
              ? (yield* sql<{ id: string }>`
                  INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, channel, chaincode)
                  VALUES (${networkId}, 'fabric', ${tree.root}, ${claimed.length}, 'PENDING', ${meta.channel}, ${meta.chaincode})
                  RETURNING id::text AS id`)[0].id
              : (yield* sql<{ id: string }>`
                  INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address)
                  VALUES (${networkId}, 'evm', ${tree.root}, ${claimed.length}, 'PENDING', ${meta.chainId}, ${meta.contractAddress.toLowerCase()})
                  RETURNING id::text AS id`)[0].id
            const anchorsJson = JSON.stringify(claimed.map((r, i) => ({ r: r.id, i, p: tree.proofs[i] })))
            yield* sql`
              INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, confirmed)
              SELECT x.r, ${networkId}, ${chainType}, ${batchId}, x.i,
                ARRAY(SELECT jsonb_array_elements_text(x.p)), false
              FROM jsonb_to_recordset(${anchorsJson}::jsonb) AS x(r text, i int, p jsonb)`
            yield* sql`
              UPDATE records r SET status = 'BATCHING', updated_at = now()
              FROM anchors a WHERE a.batch_id = ${batchId} AND a.record_id = r.id AND r.status = 'QUEUED'
                AND ${requiredAnchorsExist}`
            if (existing.length > 0 && existing[0].state === "CONFIRMED") {
              yield* sql`UPDATE anchors SET confirmed = true WHERE batch_id = ${batchId}`
              yield* completeRecords(batchId)
            }
            return { batchId, root: tree.root, leafCount: claimed.length, joined: existing.length > 0 }
          })).pipe(orDie),

        openBatches: (networkId) =>
          sql<BatchRow>`
            SELECT ${batchCols} FROM anchor_batches
            WHERE network_id = ${networkId} AND state IN ('PENDING', 'SENT', 'MINED') ORDER BY id`.pipe(orDie),

        // sent_at on the node's Clock: the writer measures a transaction's age (stuck, fee bump) against it.
        markSent: (batchId, tx) =>
          Effect.flatMap(Clock.currentTimeMillis, (ms) => sql`
            UPDATE anchor_batches SET state = 'SENT', nonce = ${tx.nonce}, gas_limit = ${tx.gas.toString()}::bigint, tx_hash = ${tx.txHash}, raw_tx = ${tx.rawTx},
              tx_hashes = array_append(tx_hashes, ${tx.txHash}::text),
              max_fee_per_gas = ${tx.maxFeePerGas.toString()}::numeric, max_priority_fee_per_gas = ${tx.maxPriorityFeePerGas.toString()}::numeric,
              sent_at = ${new Date(ms)}, attempts = attempts + 1, updated_at = now()
            WHERE id = ${batchId} AND state IN ('PENDING', 'SENT')`).pipe(Effect.asVoid, orDie),

        markAdopted: (batchId) =>
          Effect.flatMap(Clock.currentTimeMillis, (ms) =>
            sql`UPDATE anchor_batches SET state = 'SENT', sent_at = ${new Date(ms)}, updated_at = now() WHERE id = ${batchId} AND state = 'PENDING'`)
            .pipe(Effect.asVoid, orDie),

        resetToPending: (batchId, error) =>
          sql`
            UPDATE anchor_batches SET state = 'PENDING', nonce = NULL, tx_hash = NULL, raw_tx = NULL, last_error = ${error},
              updated_at = now()
            WHERE id = ${batchId} AND state = 'SENT'`.pipe(Effect.asVoid, orDie),

        noteError: (batchId, error) =>
          sql`UPDATE anchor_batches SET last_error = ${error}, attempts = attempts + 1, updated_at = now() WHERE id = ${batchId}`
            .pipe(Effect.asVoid, orDie),

        findLiveBatchByRoot: (networkId, root) =>
          sql<BatchRow>`
            SELECT ${batchCols} FROM anchor_batches
            WHERE network_id = ${networkId} AND merkle_root = ${root} AND state NOT IN ('DROPPED', 'FAILED')`.pipe(
            Effect.map((rows) => rows[0]),
            orDie
          ),

        markMined: (batchId, f) =>
          sql`
            UPDATE anchor_batches SET state = CASE WHEN state = 'CONFIRMED' THEN state ELSE 'MINED' END,
              ${minedColumns(f)},
              updated_at = now()
            WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED')`.pipe(Effect.asVoid, orDie),

        confirm: (batchId) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql`
              UPDATE anchor_batches SET state = 'CONFIRMED', updated_at = now() WHERE id = ${batchId} AND state = 'MINED' RETURNING id`
            if (rows.length === 0) return 0
            yield* lockHybridRecords(batchId)
            yield* sql`UPDATE anchors SET confirmed = true WHERE batch_id = ${batchId}`
            return yield* completeRecords(batchId)
          })).pipe(orDie),

        drop: (batchId, reason) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql`
              UPDATE anchor_batches SET state = 'DROPPED', last_error = ${reason}, updated_at = now()
              WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED', 'CONFIRMED') RETURNING id`
            if (rows.length === 0) return 0
            const requeued = yield* sql<{ id: string }>`
              WITH gone AS (DELETE FROM anchors WHERE batch_id = ${batchId} RETURNING record_id)
              UPDATE records r SET status = 'QUEUED', anchored_at = NULL, updated_at = now()
              FROM gone WHERE gone.record_id = r.id AND r.status IN ('BATCHING', 'ANCHORED')
              RETURNING r.id`
            return requeued.length
          })).pipe(orDie),

        fail: (batchId, reason) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql`
              UPDATE anchor_batches SET state = 'FAILED', last_error = ${reason}, updated_at = now()
              WHERE id = ${batchId} AND state IN ('PENDING', 'SENT') RETURNING id`
            if (rows.length === 0) return 0
            // The anchors go to failed_anchors: the given-up transaction may still be mined (see `revive`).
            const failed = yield* sql<{ n: number }>`
              WITH gone AS (
                DELETE FROM anchors WHERE batch_id = ${batchId}
                RETURNING record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof
              ), kept AS (
                INSERT INTO failed_anchors (batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof)
                SELECT batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof FROM gone
              ), f AS (
                UPDATE records r SET status = 'FAILED', updated_at = now()
                FROM gone WHERE gone.record_id = r.id AND r.status IN ('QUEUED', 'BATCHING')
                RETURNING r.id, r.account_id, r.hash, gone.network_id, gone.chain_type
              ), ev AS (
                INSERT INTO events (event_id, account_id, record_id, kind, payload)
                SELECT ${sql.unsafe(eventId("f.id"))}, f.account_id, f.id, 'anchor.failed', jsonb_build_object(
                  'recordId', f.id, 'hash', f.hash, 'status', 'FAILED', 'txHash', NULL, 'blockNumber', NULL,
                  'networkId', f.network_id, 'chainType', f.chain_type, 'reason', ${reason}::text, 'errorCode', 'ANCHOR_FAILED')
                FROM f RETURNING 1
              )
              SELECT count(*)::int AS n FROM ev`
            return failed[0]?.n ?? 0
          })).pipe(orDie),

        findFailedBatchByRoot: (networkId, root) =>
          sql<BatchRow>`
            SELECT ${batchCols} FROM anchor_batches
            WHERE network_id = ${networkId} AND merkle_root = ${root} AND state = 'FAILED'
            ORDER BY id DESC LIMIT 1`.pipe(Effect.map((rows) => rows[0]), orDie),

        revive: (batchId, f) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql`
              UPDATE anchor_batches b SET state = 'MINED',
                ${minedColumns(f)},
                last_error = 'mined after it was given up (' || COALESCE(last_error, 'failed') || ')', updated_at = now()
              WHERE id = ${batchId} AND state = 'FAILED'
                AND NOT EXISTS (SELECT 1 FROM anchor_batches l WHERE l.network_id = b.network_id AND l.merkle_root = b.merkle_root
                                AND l.state NOT IN ('DROPPED', 'FAILED'))
              RETURNING id`
            if (rows.length === 0) return undefined
            // Records that are FAILED still, and have not been anchored on this network since.
            const revived = yield* sql<{ n: number }>`
              WITH back AS (
                DELETE FROM failed_anchors fa WHERE fa.batch_id = ${batchId}
                RETURNING record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof
              ), r AS (
                UPDATE records r SET status = 'BATCHING', updated_at = now()
                FROM back WHERE back.record_id = r.id AND r.status = 'FAILED'
                  AND NOT EXISTS (SELECT 1 FROM anchors a WHERE a.record_id = r.id AND a.network_id = back.network_id)
                RETURNING r.id
              ), ins AS (
                INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, confirmed)
                SELECT back.record_id, back.network_id, back.chain_type, back.batch_id, back.leaf_index, back.merkle_proof, false
                FROM back JOIN r ON r.id = back.record_id
                RETURNING 1
              )
              SELECT count(*)::int AS n FROM ins`
            return revived[0]?.n ?? 0
          })).pipe(orDie),

        cursor: (networkId) =>
          sql<{ blockNumber: string; blockHash: Hex }>`
            SELECT block_number::text AS block_number, block_hash FROM chain_cursors WHERE network_id = ${networkId}`.pipe(
            Effect.map((rows) => rows.length === 0 ? undefined : { blockNumber: BigInt(rows[0].blockNumber), blockHash: rows[0].blockHash }),
            orDie
          ),

        saveCursor: (networkId, c) =>
          sql`
            INSERT INTO chain_cursors (network_id, block_number, block_hash) VALUES (${networkId}, ${c.blockNumber.toString()}::bigint, ${c.blockHash})
            ON CONFLICT (network_id) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, updated_at = now()`
            .pipe(Effect.asVoid, orDie),

        forgetNetwork: (networkId) =>
          Effect.gen(function*() {
            const batches = yield* sql<{ id: string }>`
              SELECT id::text AS id FROM anchor_batches WHERE network_id = ${networkId} AND state NOT IN ('DROPPED', 'FAILED') ORDER BY id`
            let requeued = 0
            for (const b of batches) {
              requeued += yield* sql.withTransaction(Effect.gen(function*() {
                yield* sql`UPDATE anchor_batches SET state = 'DROPPED', last_error = 'chain reset', updated_at = now() WHERE id = ${b.id}`
                const rows = yield* sql<{ id: string }>`
                  WITH gone AS (DELETE FROM anchors WHERE batch_id = ${b.id} RETURNING record_id)
                  UPDATE records r SET status = 'QUEUED', anchored_at = NULL, updated_at = now()
                  FROM gone WHERE gone.record_id = r.id AND r.status IN ('BATCHING', 'ANCHORED')
                  RETURNING r.id`
                return rows.length
              }))
            }
            yield* sql`DELETE FROM chain_cursors WHERE network_id = ${networkId}`
            yield* sql`DELETE FROM fabric_checkpoints WHERE network_id = ${networkId}`
            yield* sql`DELETE FROM fabric_blocks WHERE network_id = ${networkId}`
            return requeued
          }).pipe(orDie),

        markFabricSent: (batchId, tx) =>
          Effect.flatMap(Clock.currentTimeMillis, (ms) => sql`
            UPDATE anchor_batches SET state = 'SENT', tx_hash = ${tx.txId}, raw_tx = ${tx.envelope},
              tx_hashes = array_append(tx_hashes, ${tx.txId}::text), chain_batch_ref = COALESCE(chain_batch_ref, id::text),
              sent_at = ${new Date(ms)}, attempts = attempts + 1, updated_at = now()
            WHERE id = ${batchId} AND state IN ('PENDING', 'SENT')`).pipe(Effect.asVoid, orDie),

        markFabricCommitted: (batchId, f) =>
          sql`
            UPDATE anchor_batches SET state = 'MINED', tx_hash = ${f.txId}, block_number = ${f.blockNumber.toString()}::bigint,
              chain_batch_ref = ${f.batchRef}, anchored_at = ${f.anchoredAt},
              tx_hashes = CASE WHEN ${f.txId}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${f.txId}::text) END,
              updated_at = now()
            WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED')`.pipe(Effect.asVoid, orDie),

        fabricCheckpoint: (networkId) =>
          sql<{ blockNumber: string; txId: string | null; blockHash: string }>`
            SELECT block_number::text AS block_number, tx_id, block_hash FROM fabric_checkpoints WHERE network_id = ${networkId}`.pipe(
            Effect.map((rows) =>
              rows.length === 0 ? undefined : { blockNumber: BigInt(rows[0].blockNumber), txId: rows[0].txId, blockHash: rows[0].blockHash }
            ),
            orDie
          ),

        applyFabricAdopted: (batchId, blockHash) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql`
              UPDATE anchor_batches SET state = 'CONFIRMED', block_hash = ${blockHash}, updated_at = now()
              WHERE id = ${batchId} AND state = 'MINED' RETURNING id`
            if (rows.length === 0) return 0
            yield* lockHybridRecords(batchId)
            yield* sql`UPDATE anchors SET confirmed = true WHERE batch_id = ${batchId}`
            return yield* completeRecords(batchId)
          })).pipe(orDie),

        applyFabricBlock: (networkId, block, anchors) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`
              INSERT INTO fabric_blocks (network_id, block_number, block_hash, tx_count, anchors)
              VALUES (${networkId}, ${block.number.toString()}::bigint, ${block.hash}, ${block.txCount}, ${anchors.length})`
            let batches = 0
            let records = 0
            for (const a of anchors) {
              const rows = yield* sql<{ id: string }>`
                UPDATE anchor_batches SET state = 'CONFIRMED', tx_hash = ${a.txId}, chain_batch_ref = ${a.batchRef},
                  block_number = ${block.number.toString()}::bigint, block_hash = ${block.hash}, anchored_at = ${a.anchoredAt},
                  tx_hashes = CASE WHEN ${a.txId}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${a.txId}::text) END,
                  updated_at = now()
                WHERE network_id = ${networkId} AND merkle_root = ${a.root.toLowerCase()} AND chain_type = 'fabric'
                  AND state IN ('PENDING', 'SENT', 'MINED')
                RETURNING id::text AS id`
              for (const r of rows) {
                batches++
                yield* lockHybridRecords(r.id)
                yield* sql`UPDATE anchors SET confirmed = true WHERE batch_id = ${r.id}`
                records += yield* completeRecords(r.id)
              }
            }
            yield* sql`
              INSERT INTO fabric_checkpoints (network_id, block_number, tx_id, block_hash)
              VALUES (${networkId}, ${block.number.toString()}::bigint, ${block.lastTxId}, ${block.hash})
              ON CONFLICT (network_id) DO UPDATE SET block_number = EXCLUDED.block_number, tx_id = EXCLUDED.tx_id,
                block_hash = EXCLUDED.block_hash, updated_at = now()`
            return { batches, records }
          })).pipe(orDie)
      })
    })
  )
}
