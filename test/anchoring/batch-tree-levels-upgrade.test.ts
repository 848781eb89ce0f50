/**
 * Migration 0025 over existing batches, through the stores on a real PostgreSQL (no chain): a batch cut before it
 * (anchors with their proofs stored, no levels on the batch) serves the proofs it stored; records that join it
 * after the upgrade (same hashes, another order) get the batch's trees written and proofs derived from them, equal
 * to what the per-record code computes for their cut; a batch cut after it stores no proof on its anchors and serves
 * buildTree's / buildRecordLog's proofs from its levels — read as slices (a few records), whole (many) and from the
 * cache (again) — also after it was given up and revived (failed_anchors keeps the leaf positions).
 *   npx vitest run test/anchoring/batch-tree-levels-upgrade.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Buffer } from "node:buffer"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { anchorReads } from "../../src/anchoring/anchorViews.ts"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { batchTreeNodes, logProofOffsets } from "../../src/anchoring/batchTrees.ts"
import { buildTree } from "../../src/anchoring/merkle.ts"
import { buildRecordLog } from "../support/trees.ts"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { EvmStore } from "../../src/evm/EvmStore.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const NET = "levels-net"
const meta = { chainType: "evm", chainId: 31337, contractAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" } as const
const id = (n: number) => n.toString(16).padStart(24, "0")
const hashOf = (n: number) => Buffer.from(`record ${n}`).toString("hex").padEnd(64, "7")
const txHash = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as const

describe("migration 0025: proofs from the batch's stored trees", () => {
  it.effect("a batch cut before serves its stored proofs; joined and new batches serve the per-record code's proofs", () =>
    Effect.gen(function*() {
      yield* migrateTo(url, Object.keys(migrations).filter((name) => name < "0025"))
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_lv', 'lv', 'ENTERPRISE')`
      const record = (n: number, hash: string) =>
        sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source)
            VALUES (${id(n)}, 'acc_lv', 'test', ${hash}, 'evm', ${NET}, 'SEPARATED', 'hash')`

      // Before 0025: a batch of records 1–3 as the cut then wrote it, proofs on every anchor; SENT (live: joinable).
      const oldHashes = [hashOf(1), hashOf(2), hashOf(3)]
      const oldTree = buildTree(oldHashes)
      const oldLog = buildRecordLog(oldHashes)
      for (const [i, h] of oldHashes.entries()) yield* record(i + 1, h)
      const [old] = yield* sql<{ id: string }>`
        INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address, log_root, tx_hash)
        VALUES (${NET}, 'evm', ${oldTree.root}, 3, 'SENT', 31337, ${meta.contractAddress.toLowerCase()}, ${oldLog.root}, ${txHash(1)})
        RETURNING id::text AS id`
      for (const [i] of oldHashes.entries()) {
        yield* sql`INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, log_index, log_proof)
          VALUES (${id(i + 1)}, ${NET}, 'evm', ${old!.id}, ${i}, ${oldTree.proofs[i]!}, ${oldLog.entries[i]!.index},
            decode(${oldLog.entries[i]!.proofHex}, 'hex'))`
      }
      // The network's cursor past them (they are in a batch).
      yield* sql`INSERT INTO queue_cursors (network_id, after_xid, after_id) SELECT ${NET}, max(insert_xid), '' FROM records`

      yield* migrateTo(url, Object.keys(migrations))
      const batches = yield* BatchStore
      const evm = yield* EvmStore
      const mineAndConfirm = (batchId: string, n: number) =>
        Effect.gen(function*() {
          yield* evm.markMined(batchId, {
            txHash: txHash(n),
            chainBatchId: BigInt(n),
            blockNumber: BigInt(100 + n),
            blockHash: txHash(1000 + n),
            anchoredAt: new Date(),
            gasUsed: 50_000n
          })
          yield* batches.confirm(batchId)
        })

      // Records 4–6: the old batch's hashes in another order. They join it; its trees are written.
      const joinHashes = [hashOf(3), hashOf(1), hashOf(2)]
      for (const [i, h] of joinHashes.entries()) yield* record(4 + i, h)
      const joined = (yield* batches.cutBatch(NET, 10, meta))!
      assert.deepStrictEqual({ batchId: joined.batchId, joined: joined.joined }, { batchId: old!.id, joined: true })
      const [stored] = yield* sql<{ merkle: boolean; log: boolean }>`
        SELECT merkle_levels IS NOT NULL AS merkle, log_levels IS NOT NULL AS log FROM anchor_batches WHERE id = ${old!.id}`
      assert.deepStrictEqual(stored, { merkle: true, log: true })
      yield* mineAndConfirm(old!.id, 1)

      // A batch cut after 0025: records 10–79 (70: more nodes of one batch than are read as slices).
      const newHashes = Array.from({ length: 70 }, (_, i) => hashOf(10 + i))
      for (const [i, h] of newHashes.entries()) yield* record(10 + i, h)
      const fresh = (yield* batches.cutBatch(NET, 100, meta))!
      assert.deepStrictEqual({ leafCount: fresh.leafCount, joined: fresh.joined }, { leafCount: 70, joined: false })
      const [proofless] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM anchors WHERE batch_id = ${fresh.batchId} AND merkle_proof IS NULL AND log_proof IS NULL
          AND merkle_index IS NOT NULL AND log_index IS NOT NULL`
      assert.strictEqual(proofless!.n, 70)

      // Given up, then mined after all: its anchors go to failed_anchors and come back (with their leaf positions).
      yield* batches.fail(fresh.batchId, "test: given up")
      yield* evm.revive(fresh.batchId, {
        txHash: txHash(2),
        chainBatchId: 2n,
        blockNumber: 102n,
        blockHash: txHash(1002),
        anchoredAt: new Date(),
        gasUsed: 50_000n
      })
      yield* batches.confirm(fresh.batchId)

      const proofsOf = (ids: ReadonlyArray<string>) => Effect.map(anchorReads(sql).anchorRows(ids), (rows) => ids.map((i) => rows.get(i)?.[0]?.merkleProof))
      const logProofOf = (recordId: string) =>
        Effect.gen(function*() {
          const [a] = yield* sql<{ batchId: string; leafCount: number; logIndex: number; merkleRoot: string; logProof: Uint8Array | null }>`
            SELECT a.batch_id::text AS batch_id, b.leaf_count, a.log_index, b.merkle_root, a.log_proof
            FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = ${recordId}`
          if (a!.logProof !== null) return Buffer.from(a!.logProof).toString("hex")
          const offsets = logProofOffsets(a!.leafCount, a!.logIndex)
          const node = yield* batchTreeNodes(sql).readNodes("log", [{ batchId: a!.batchId, merkleRoot: a!.merkleRoot, offsets }])
          return Buffer.concat(offsets.map((o) => node(a!.batchId, o))).toString("hex")
        })

      // Cut before 0025: the proofs it stored. Joined since: its cut's proofs (leaf_index = the place in that cut).
      const joinTree = buildTree(joinHashes)
      const joinLog = buildRecordLog(joinHashes)
      assert.deepStrictEqual(yield* proofsOf([1, 2, 3].map(id)), [...oldTree.proofs])
      assert.deepStrictEqual(yield* proofsOf([4, 5, 6].map(id)), [...joinTree.proofs])
      for (let i = 0; i < 3; i++) {
        assert.strictEqual(yield* logProofOf(id(1 + i)), oldLog.entries[i]!.proofHex)
        assert.strictEqual(yield* logProofOf(id(4 + i)), joinLog.entries[i]!.proofHex)
      }
      // After 0025: many records of the batch (its whole levels read, then cached), then two of them (from the cache),
      // each equal to the per-record code's; the log proofs of single records (slices), as receipts read them.
      const newTree = buildTree(newHashes)
      const newLog = buildRecordLog(newHashes)
      const newIds = newHashes.map((_, i) => id(10 + i))
      assert.deepStrictEqual(yield* proofsOf(newIds), [...newTree.proofs])
      assert.deepStrictEqual(yield* proofsOf(newIds.slice(5, 7)), newTree.proofs.slice(5, 7))
      for (const i of [0, 1, 33, 68, 69]) assert.strictEqual(yield* logProofOf(newIds[i]!), newLog.entries[i]!.proofHex)
    }).pipe(
      Effect.provide(
        EvmStore.layer.pipe(Layer.provideMerge(BatchStore.layer), Layer.provideMerge(Layer.suspend(() => pgClientLayer(Redacted.make(url)))))
      )
    ))
})
