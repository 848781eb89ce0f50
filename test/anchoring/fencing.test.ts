/**
 * Fencing by the lock (src/anchoring/Leadership.ts): a leader's writes go through its pool, not
 * through the session that holds the network's advisory lock, so a leader whose lock session is gone
 * (paused past its lease, cut off) could still write once it runs again. The transaction that cuts a
 * batch and the one that stores a signed transaction check, inside themselves, that the lock is still
 * this leader's. Here the lock session is ended under a pipeline's feet, as PostgreSQL ends it at the
 * lease, and the next cut and the next stored transaction are refused; nothing is written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { CurrentLeadership, LeadershipLost } from "../../src/anchoring/Leadership.ts"
import { EvmStore } from "../../src/evm/EvmStore.ts"
import { hexId, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStores = withDatabaseServices(() => url, Layer.mergeAll(BatchStore.layer, EvmStore.layer.pipe(Layer.provideMerge(BatchStore.layer))))

const evmMeta = { chainType: "evm", chainId: 31337, contractAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" } as const

const lost = (exit: Exit.Exit<unknown, unknown>) => Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof LeadershipLost

describe("fencing by the lock (real PostgreSQL)", () => {
  it.effect("a pipeline whose lock session is gone cuts no batch and stores no transaction", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const batches = yield* BatchStore
      const evm = yield* EvmStore
      const net = `evm-fence-${hexId(6)}`
      const key = `anchord:evm:${net}`
      const account = `acc_${hexId()}`
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'fence', 'ENTERPRISE')`
      const queue = (from: number) =>
        sql`
        INSERT INTO records (id, account_id, environment, hash, status, chain_type, network_id, package_mode, source)
        SELECT lpad(to_hex(i), 24, '0'), ${account}, 'test', md5(i::text) || md5((-i)::text), 'QUEUED', 'evm', ${net}, 'SEPARATED', 'hash'
        FROM generate_series(${from}, ${from + 4}) i`

      // The lock session, as Pipeline.leaderLoop holds it (reserved for the whole test).
      const conn = yield* sql.reserve
      const [row] = yield* conn.executeValues(
        `SELECT pg_advisory_lock(hashtextextended($1, 0)), pg_backend_pid(),
           (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())`,
        [key]
      )
      const lockSession = { key, pid: Number(row?.[1]), backendStart: String(row?.[2]) }

      yield* queue(1)
      const held = yield* batches.cutBatch(net, 100, evmMeta).pipe(Effect.provideService(CurrentLeadership, lockSession))
      assert.strictEqual(held?.leafCount, 5)
      // While the lock is held the stored transaction goes through.
      const tx = { nonce: 0, gas: 100_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n, txHash: `0x${hexId(64)}`, rawTx: `0x${hexId(64)}` } as const
      yield* evm.markSent(held!.batchId, tx).pipe(Effect.provideService(CurrentLeadership, lockSession))

      // The server ends the lock session (as at the lease's end); the pipeline has not noticed yet.
      yield* sql`SELECT pg_terminate_backend(${lockSession.pid})`
      yield* queue(100)
      const cut = yield* batches.cutBatch(net, 100, evmMeta).pipe(Effect.provideService(CurrentLeadership, lockSession), Effect.exit)
      assert.isTrue(lost(cut), `a cut after the lock was lost: ${String(Exit.isSuccess(cut) ? JSON.stringify(cut.value) : cut.cause)}`)
      const claimed = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM anchors WHERE batch_id <> ${held!.batchId}::bigint`
      assert.strictEqual(claimed[0]!.n, 0)

      const sent = yield* evm.markSent(held!.batchId, { ...tx, nonce: 1, txHash: `0x${hexId(64)}` })
        .pipe(Effect.provideService(CurrentLeadership, lockSession), Effect.exit)
      assert.isTrue(lost(sent), "a transaction stored after the lock was lost")
      const [batch] = yield* sql<{ nonce: string }>`SELECT nonce::text AS nonce FROM anchor_batches WHERE id = ${held!.batchId}::bigint`
      assert.strictEqual(batch!.nonce, "0")
      const broadcast = yield* evm.fence.pipe(Effect.provideService(CurrentLeadership, lockSession), Effect.exit)
      assert.isTrue(lost(broadcast), "a broadcast allowed after the lock was lost")

      // Outside a pipeline (no leadership given) nothing is checked: the stores' other callers are unchanged.
      const unfenced = yield* batches.cutBatch(net, 100, evmMeta)
      assert.strictEqual(unfenced?.leafCount, 5)
    }).pipe(Effect.scoped, withStores), 60_000)
})
