/**
 * Batches are ordered by their numeric id. The batch columns read the id as text (`id::text AS id`), and
 * an `ORDER BY id` then sorts that text: batch 10 came before batch 9, so the open batches were not
 * oldest first and the "newest" failed batch with a root could be an older one (real PostgreSQL).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { batcherTick } from "../../src/anchoring/Batcher.ts"
import { hexId, startClockNearNow, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStore = withDatabaseServices(() => url, BatchStore.layer)

describe("batch order (real PostgreSQL)", () => {
  it.effect("open batches oldest first and the newest failed batch by root, across 9 → 10", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* BatchStore
      const t0 = yield* startClockNearNow
      const net = `evm-order-${hexId(6)}`
      const account = `acc_${hexId()}`
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'order', 'ENTERPRISE')`
      for (let i = 0; i < 3; i++) {
        yield* sql`
          INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, created_at)
          VALUES (${hexId()}, ${account}, 'test', ${hexId(64)}, 'evm', ${net}, 'SEPARATED', 'hash', ${new Date(t0 - 10_000)})`
      }
      yield* sql`SELECT setval('anchor_batches_id_seq', 8)`
      // one record per batch: batches 9, 10 and 11
      yield* batcherTick({
        networkId: net,
        batchMaxSize: 1,
        batchWindowMs: 1_000,
        meta: { chainType: "evm", chainId: 31337, contractAddress: "0x5fbdb2315678afecb367f032d93f642f64180aa3" }
      }, Effect.void)
      const open = yield* store.openBatches(net)
      assert.deepStrictEqual(open.map((b) => b.id), ["9", "10", "11"])

      const root = `0x${hexId(64)}`
      yield* sql`UPDATE anchor_batches SET state = 'FAILED', merkle_root = ${root} WHERE id IN (9, 10)`
      const failed = yield* store.findFailedBatchByRoot(net, root as `0x${string}`)
      assert.strictEqual(failed?.id, "10")
    }).pipe(withStore))
})
