/**
 * Upgrading a database to record states read from their batches (migration 0016) with records in every
 * state written the old way (status BATCHING / ANCHORED and anchored_at stored in the record): each
 * reads as it did (status, anchoredAt, the `status=` filter), the stored status keeps only QUEUED and
 * FAILED, and the batcher's queue (now a cursor) takes the queued record and nothing anchored.
 *   npx vitest run test/anchoring/record-state-upgrade.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { RecordStore } from "../../src/records/RecordStore.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const id = (n: number) => n.toString(16).padStart(24, "0")
const owner = { accountId: "acc_up", environment: "test" } as const
const T1 = new Date("2026-11-01T10:00:00.000Z")

describe("migration 0016 over records whose state was stored", () => {
  it.effect("every record reads as before, the status filter finds the same records, the queue takes only the queued one", () =>
    Effect.gen(function*() {
      yield* migrateTo(url, Object.keys(migrations).filter((name) => name < "0016"))
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_up', 'up', 'ENTERPRISE')`
      const [confirmed] = yield* sql<{ id: string }>`
        INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address, chain_batch_id,
          tx_hash, block_number, block_hash, anchored_at)
        VALUES ('net', 'evm', ${`0x${"c1".repeat(32)}`}, 2, 'CONFIRMED', 31337, ${`0x${"aa".repeat(20)}`}, 1, ${`0x${"11".repeat(32)}`}, 5,
          ${`0x${"b1".repeat(32)}`}, ${T1}) RETURNING id::text AS id`
      const [sent] = yield* sql<{ id: string }>`
        INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address, tx_hash)
        VALUES ('net', 'evm', ${`0x${"c2".repeat(32)}`}, 1, 'SENT', 31337, ${`0x${"aa".repeat(20)}`}, ${`0x${"22".repeat(32)}`})
        RETURNING id::text AS id`
      // 1 ANCHORED, 2 BATCHING, 3 QUEUED, 4 FAILED, 5 ANCHORED then soft-deleted: as the old pipeline left them.
      const rows: ReadonlyArray<readonly [number, string, string | null, Date | null]> = [
        [1, "ANCHORED", confirmed!.id, T1],
        [2, "BATCHING", sent!.id, null],
        [3, "QUEUED", null, null],
        [4, "FAILED", null, null],
        [5, "ANCHORED", confirmed!.id, T1]
      ]
      for (const [n, status, batch, anchoredAt] of rows) {
        yield* sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, status, anchored_at,
            deleted_at)
          VALUES (${id(n)}, 'acc_up', 'test', ${"ab".repeat(32)}, 'evm', 'net', 'SEPARATED', 'hash', ${status}, ${anchoredAt},
            ${n === 5 ? new Date() : null})`
        if (batch !== null) {
          yield* sql`INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, confirmed)
            VALUES (${id(n)}, 'net', 'evm', ${batch}, 0, '{}', ${status === "ANCHORED"})`
        }
      }

      yield* migrateTo(url, Object.keys(migrations))
      const store = yield* RecordStore
      const batches = yield* BatchStore

      // What the API reads: status and anchoredAt as before.
      const seen: Array<[string, string | null]> = []
      for (const n of [1, 2, 3, 4]) {
        const found = yield* store.get(owner, id(n), false)
        assert.strictEqual(found._tag, "Found")
        if (found._tag === "Found") seen.push([found.row.status, found.row.anchoredAt?.toISOString() ?? null])
      }
      assert.deepStrictEqual(seen, [["ANCHORED", T1.toISOString()], ["BATCHING", null], ["QUEUED", null], ["FAILED", null]])
      const deleted = yield* store.get(owner, id(5), true)
      assert.deepStrictEqual(deleted._tag === "Found" ? [deleted.row.status, deleted.row.anchoredAt] : [], ["ANCHORED", T1])
      // The `status=` filter finds the same records.
      const listed: Record<string, Array<string>> = {}
      for (const status of ["QUEUED", "BATCHING", "ANCHORED", "FAILED", "DELETED"]) {
        listed[status] = (yield* store.list(owner, { limit: 10, status, includeDeleted: status === "DELETED" })).map((r) => r.id)
      }
      assert.deepStrictEqual(listed, { QUEUED: [id(3)], BATCHING: [id(2)], ANCHORED: [id(1)], FAILED: [id(4)], DELETED: [id(5)] })
      // Stored: only what a record-level event sets.
      const stored = yield* sql<{ status: string }>`SELECT status FROM records ORDER BY id`
      assert.deepStrictEqual(stored.map((r) => r.status), ["QUEUED", "QUEUED", "QUEUED", "FAILED", "QUEUED"])

      // The batcher's queue: only record 3, then it reads BATCHING.
      assert.strictEqual((yield* batches.queueState("net", 10)).count, 1)
      const cut = yield* batches.cutBatch("net", 10, { chainType: "evm", chainId: 31337, contractAddress: `0x${"aa".repeat(20)}` })
      assert.strictEqual(cut?.leafCount, 1)
      const after = yield* store.get(owner, id(3), false)
      assert.strictEqual(after._tag === "Found" ? after.row.status : "", "BATCHING")
      assert.strictEqual((yield* batches.queueState("net", 10)).count, 0)
    }).pipe(
      Effect.provide(Layer.mergeAll(RecordStore.layer, BatchStore.layer).pipe(Layer.provideMerge(Layer.suspend(() => pgClientLayer(Redacted.make(url))))))
    ))
})
