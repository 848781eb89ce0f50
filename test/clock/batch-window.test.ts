/**
 * The batch window on virtual time: a partial batch is cut when its oldest record is exactly
 * BATCH_WINDOW old, never a millisecond earlier; a full batch at once (real PostgreSQL, real store).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { batcherTick, type BatchTarget } from "../../src/anchoring/Batcher.ts"
import { hexId, startClockNearNow, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStore = withDatabaseServices(() => url, BatchStore.layer)

const WINDOW = 2_000
const target = (networkId: string): BatchTarget => ({
  networkId,
  batchMaxSize: 3,
  batchWindowMs: WINDOW,
  meta: { chainType: "evm", chainId: 31337, contractAddress: "0x5fbdb2315678afecb367f032d93f642f64180aa3" }
})

/** `n` QUEUED records on `networkId`, created at `at` (the ingest stamps createdAt from the Clock). */
const queued = (networkId: string, n: number, at: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const account = `acc_${hexId()}`
    yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'batch', 'ENTERPRISE')`
    for (let i = 0; i < n; i++) {
      yield* sql`
        INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, created_at)
        VALUES (${hexId()}, ${account}, 'test', ${hexId(64)}, 'evm', ${networkId}, 'SEPARATED', 'hash', ${new Date(at)})`
    }
  })

const batches = (networkId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ leafCount: number }>`SELECT leaf_count FROM anchor_batches WHERE network_id = ${networkId} ORDER BY id`
    return rows.map((r) => Number(r.leafCount))
  })

describe("batch window (TestClock, real PostgreSQL)", () => {
  it.effect("a partial batch waits for the window from its oldest record; a full one goes at once", () =>
    Effect.gen(function*() {
      const t0 = yield* startClockNearNow
      const net = `evm-window-${hexId(6)}`
      yield* queued(net, 2, t0)
      yield* batcherTick(target(net), Effect.void)
      assert.deepStrictEqual(yield* batches(net), [])

      yield* TestClock.adjust(WINDOW - 1)
      yield* batcherTick(target(net), Effect.void)
      assert.deepStrictEqual(yield* batches(net), [], "cut before the window passed")

      yield* TestClock.adjust(1)
      yield* batcherTick(target(net), Effect.void)
      assert.deepStrictEqual(yield* batches(net), [2])

      // 4 more at once: a full batch of 3 right away; the 4th waits for its own window
      const t1 = yield* Clock.currentTimeMillis
      yield* queued(net, 4, t1)
      yield* batcherTick(target(net), Effect.void)
      assert.deepStrictEqual(yield* batches(net), [2, 3])
      yield* TestClock.adjust(WINDOW)
      yield* batcherTick(target(net), Effect.void)
      assert.deepStrictEqual(yield* batches(net), [2, 3, 1])
    }).pipe(withStore))
})
