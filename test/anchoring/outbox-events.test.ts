/**
 * The events of the batch state machine, on a real PostgreSQL through the stores themselves (no chain):
 * what `anchor.confirmed` and `anchor.failed` store (src/outbox/events.ts: the facts, plus the record's
 * primary anchor on top and a hybrid record's other anchor in `dualAnchor`), a hybrid record completing
 * once when its second anchor is confirmed, a soft-deleted record re-anchored after a chain reset staying
 * silent, a given-up batch revived with its records, and what the outbox's `decode` gives back.
 *   npx vitest run test/anchoring/outbox-events.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { EvmStore } from "../../src/evm/EvmStore.ts"
import { FabricStore } from "../../src/fabric/FabricStore.ts"
import { decode } from "../../src/outbox/Outbox.ts"
import { withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"
import { allEventsOf } from "../support/events.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStores = withDatabaseServices(() => url, Layer.mergeAll(EvmStore.layer, FabricStore.layer).pipe(Layer.provideMerge(BatchStore.layer)))

const EVM = "evm-events"
const FABRIC = "fabric-events"
const evmMeta = { chainType: "evm", chainId: 31337, contractAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" } as const
const fabricMeta = { chainType: "fabric", channel: "mychannel", chaincode: "anchord" } as const
const id = (n: number) => n.toString(16).padStart(24, "0")
const hash = (n: number) => n.toString(16).padStart(64, "0")
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s))
const txHash = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as const

// Every event with its payload: a derived anchor.confirmed's assembled by the node (migration 0024: its one assembly).
const events = Effect.gen(function*() {
  const rows = yield* allEventsOf(yield* SqlClient.SqlClient)
  return rows.map((r) => ({ kind: r.kind, recordId: r.recordId, payload: r.payload as Record<string, unknown> }))
})

const evmMined = (batchId: string, n: number) =>
  Effect.flatMap(EvmStore, (s) =>
    s.markMined(batchId, {
      txHash: txHash(n),
      chainBatchId: BigInt(n),
      blockNumber: BigInt(100 + n),
      blockHash: txHash(1000 + n),
      anchoredAt: at(n),
      gasUsed: 50_000n
    }))

describe("anchor events through the outbox (real PostgreSQL)", () => {
  it.effect("confirmed, hybrid once, soft-deleted silent after a reset, failed and revived", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const batches = yield* BatchStore
      const evm = yield* EvmStore
      const fabric = yield* FabricStore
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_events', 'events', 'ENTERPRISE')`
      const record = (n: number, chainType: string, networkId: string) =>
        sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, created_at)
            VALUES (${id(n)}, 'acc_events', 'test', ${hash(n)}, ${chainType}, ${networkId}, 'SEPARATED', 'hash', ${at(0)})`
      yield* record(1, "evm", EVM)
      yield* record(2, "fabric", FABRIC)
      yield* record(3, "hybrid", EVM)

      // EVM batch: records 1 and 3; confirming it completes record 1 only (3 waits for its Fabric anchor).
      const e1 = (yield* batches.cutBatch(EVM, 10, evmMeta))!
      assert.strictEqual(e1.leafCount, 2)
      yield* evmMined(e1.batchId, 1)
      assert.strictEqual(yield* batches.confirm(e1.batchId), 1)
      // Fabric batch: records 2 and 3 (the hybrid records of its environment); one block confirms it.
      const f1 = (yield* batches.cutBatch(FABRIC, 10, fabricMeta, "test"))!
      assert.strictEqual(f1.leafCount, 2)
      const applied = yield* fabric.applyBlock(FABRIC, { number: 7n, hash: "ab".repeat(32), lastTxId: "cd".repeat(32), txCount: 1 }, [{ root: f1.root,
        txId: "cd".repeat(32), batchRef: f1.batchId, anchoredAt: at(2) }])
      assert.deepStrictEqual(applied, { batches: 1, records: 2 })

      const confirmed = yield* events
      assert.deepStrictEqual(confirmed.map((e) => `${e.kind}:${e.recordId}`), [
        `anchor.confirmed:${id(1)}`,
        `anchor.confirmed:${id(2)}`,
        `anchor.confirmed:${id(3)}`
      ])
      const [p1, p2, p3] = confirmed.map((e) => e.payload)
      const evmAnchor = (proof: ReadonlyArray<string>) => ({
        chainType: "evm" as const,
        networkId: EVM,
        batchId: 1,
        txHash: txHash(1),
        blockNumber: 101,
        merkleRoot: e1.root,
        merkleProof: proof,
        anchoredAt: at(1).toISOString(),
        contractAddress: evmMeta.contractAddress.toLowerCase(),
        chainId: 31337
      })
      const fabricAnchor = (proof: ReadonlyArray<string>) => ({
        chainType: "fabric" as const,
        networkId: FABRIC,
        batchId: f1.batchId,
        txHash: "cd".repeat(32),
        blockNumber: null,
        merkleRoot: f1.root,
        merkleProof: proof,
        anchoredAt: at(2).toISOString(),
        channel: "mychannel",
        chaincode: "anchord"
      })
      const e1Proofs = p1!.merkleProof as Array<string>
      assert.deepStrictEqual(p1, {
        ...evmAnchor(e1Proofs),
        recordId: id(1),
        hash: hash(1),
        status: "ANCHORED",
        recordChainType: "evm",
        anchors: [evmAnchor(e1Proofs)]
      })
      const f1Proof2 = p2!.merkleProof as Array<string>
      assert.deepStrictEqual(p2, {
        ...fabricAnchor(f1Proof2),
        recordId: id(2),
        hash: hash(2),
        status: "ANCHORED",
        recordChainType: "fabric",
        anchors: [fabricAnchor(f1Proof2)]
      })
      // Hybrid: the EVM anchor (its networkId) on top with the record's anchoredAt, the Fabric one in dualAnchor.
      const hybridAnchors = p3!.anchors as Array<{ readonly merkleProof: ReadonlyArray<string> }>
      const e1Proof3 = hybridAnchors[0]!.merkleProof
      const f1Proof3 = hybridAnchors[1]!.merkleProof
      assert.deepStrictEqual(p3, {
        ...evmAnchor(e1Proof3),
        anchoredAt: at(2).toISOString(),
        recordId: id(3),
        hash: hash(3),
        status: "ANCHORED",
        recordChainType: "hybrid",
        anchors: [evmAnchor(e1Proof3), fabricAnchor(f1Proof3)],
        dualAnchor: fabricAnchor(f1Proof3)
      })
      // What the webhook renderer reads: the facts.
      assert.deepStrictEqual(decode("anchor.confirmed", p3!), {
        kind: "anchor.confirmed",
        recordId: id(3),
        hash: hash(3),
        recordChainType: "hybrid",
        networkId: EVM,
        anchoredAt: at(2).toISOString(),
        anchors: [evmAnchor(e1Proof3), fabricAnchor(f1Proof3)]
      })

      // Record 1 soft-deleted, then the EVM chain is reset: both EVM anchors go, records 1 and 3 are re-queued,
      // anchored again. Record 3 (not deleted) is announced again, record 1 (deleted, announced) is not.
      yield* sql`UPDATE records SET deleted_at = now() WHERE id = ${id(1)}`
      assert.strictEqual(yield* evm.resetNetwork(EVM), 2)
      const e2 = (yield* batches.cutBatch(EVM, 10, evmMeta))!
      yield* evmMined(e2.batchId, 2)
      assert.strictEqual(yield* batches.confirm(e2.batchId), 1)
      const afterReset = yield* events
      assert.deepStrictEqual(afterReset.slice(3).map((e) => `${e.kind}:${e.recordId}`), [`anchor.confirmed:${id(3)}`])
      const statuses = yield* sql<{ id: string; status: string }>`SELECT id, status FROM record_states ORDER BY id`
      assert.deepStrictEqual(statuses.map((r) => r.status), ["ANCHORED", "ANCHORED", "ANCHORED"])

      // Given up: anchor.failed per record, anchors kept; mined after all: revived, then confirmed.
      yield* record(4, "evm", EVM)
      yield* record(5, "evm", EVM)
      const e3 = (yield* batches.cutBatch(EVM, 10, evmMeta))!
      assert.strictEqual(yield* batches.fail(e3.batchId, "not mined after 2 attempts"), 2)
      const failed = (yield* events).slice(4)
      assert.deepStrictEqual(failed.map((e) => e.payload), [4, 5].map((n) => ({
        recordId: id(n),
        hash: hash(n),
        status: "FAILED",
        txHash: null,
        blockNumber: null,
        networkId: EVM,
        chainType: "evm",
        reason: "not mined after 2 attempts",
        errorCode: "ANCHOR_FAILED"
      })))
      assert.deepStrictEqual(decode("anchor.failed", failed[0]!.payload), {
        kind: "anchor.failed",
        recordId: id(4),
        hash: hash(4),
        networkId: EVM,
        chainType: "evm",
        reason: "not mined after 2 attempts",
        errorCode: "ANCHOR_FAILED"
      })
      const given = (yield* batches.findFailedBatchByRoot(EVM, e3.root))!
      assert.strictEqual(given.id, e3.batchId)
      assert.strictEqual(yield* evm.revive(e3.batchId, {
        txHash: txHash(3),
        chainBatchId: 3n,
        blockNumber: 103n,
        blockHash: txHash(1003),
        anchoredAt: at(3),
        gasUsed: null
      }), 2)
      assert.strictEqual(yield* batches.confirm(e3.batchId), 2)
      const revived = (yield* events).slice(6)
      assert.deepStrictEqual(revived.map((e) => `${e.kind}:${e.recordId}:${e.payload.txHash}`), [
        `anchor.confirmed:${id(4)}:${txHash(3)}`,
        `anchor.confirmed:${id(5)}:${txHash(3)}`
      ])
    }).pipe(withStores))
})
