/**
 * The status filters (src/anchoring/recordState.ts, migration 0020) against the plain state, on a mixed
 * data set made by the real batch state machine (BatchStore: cuts, joins, confirmations, drops, given-up
 * batches and their revival) over several networks — two EVM ones, a Fabric one that also anchors the
 * hybrid records of `test`, and one no batcher serves — with soft-deleted records, in seeded random
 * rounds. After every round, for every account, environment and status:
 * - `RecordStore.list` (paged, and with the console's chain-type filter) returns exactly the records
 *   whose `anchord_record_state(…).status` is that status, in the same order;
 * - the count fragments (the console's counts, the metrics' queue depth per network) count exactly those.
 * The seed is printed on failure (ANCHORD_SEED=… to replay one).
 *   npx vitest run test/anchoring/status-filters.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { batchQueue } from "../../src/anchoring/batchQueue.ts"
import { batchTransitions } from "../../src/anchoring/batchTransitions.ts"
import { inStatus, type RecordStatus, stateJoin } from "../../src/anchoring/recordState.ts"
import { RecordStore } from "../../src/records/RecordStore.ts"
import { withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStores = withDatabaseServices(() => url, Layer.mergeAll(RecordStore.layer, BatchStore.layer))

const SEED = Number(process.env.ANCHORD_SEED ?? 20261126)
const ROUNDS = 14
const STATUSES: ReadonlyArray<RecordStatus> = ["QUEUED", "BATCHING", "ANCHORED", "FAILED"]
const ACCOUNTS = ["acc_sf_a", "acc_sf_b"] as const
const ENVIRONMENTS = ["test", "live"] as const

/** mulberry32: a small seeded generator, so a failing data set can be made again. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const EVM = (chainId: number) => ({ chainType: "evm" as const, chainId, contractAddress: `0x${"ab".repeat(20)}` })
const FABRIC = { chainType: "fabric" as const, channel: "ch", chaincode: "cc" }

describe("status filters against the plain state (real PostgreSQL, seeded)", () => {
  it.effect("lists, pages and counts agree with anchord_record_state for every status, round after round", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const records = yield* RecordStore
      const batches = yield* BatchStore
      const queue = batchQueue(sql)
      const transitions = batchTransitions(sql)
      const random = prng(SEED)
      const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
      for (const a of ACCOUNTS) yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${a}, ${a}, 'ENTERPRISE')`
      // As ingest does at start for every network it assigns: the idle network has a cursor, never moved.
      for (const n of ["evm-sf-1", "evm-sf-2", "evm-sf-idle"]) yield* queue.ensureCursor(n)
      yield* queue.ensureCursor("fab-sf", "test")

      let serial = 0
      /** Records in one transaction (one insert_xid), ids in creation order as the node makes them. */
      const ingest = (n: number, hashes?: ReadonlyArray<string>) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = Array.from({ length: n }, (_, i) => {
            serial++
            const kind = random()
            const [chainType, networkId] = kind < 0.45
              ? ["evm", "evm-sf-1"]
              : kind < 0.65
              ? ["evm", "evm-sf-2"]
              : kind < 0.78
              ? ["fabric", "fab-sf"]
              : kind < 0.9
              ? ["hybrid", "evm-sf-1"]
              : ["evm", "evm-sf-idle"]
            return {
              id: serial.toString(16).padStart(24, "0"),
              account: pick(ACCOUNTS),
              // Hybrid records are anchored on Fabric only in `test` (the Fabric batcher's environment).
              environment: chainType === "hybrid" ? "test" : pick(ENVIRONMENTS),
              hash: hashes?.[i] ?? (serial.toString(16).padStart(8, "0") + "cd".repeat(28)),
              chainType,
              networkId
            }
          })
          yield* sql`
            INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source)
            SELECT x.id, x.account, x.environment, x.hash, x.chain_type, x.network_id, 'SEPARATED', 'hash'
            FROM jsonb_to_recordset(${JSON.stringify(rows.map((r) => ({ ...r, chain_type: r.chainType, network_id: r.networkId })))}::jsonb)
              AS x(id text, account text, environment text, hash text, chain_type text, network_id text)`
          return rows
        }))

      const open = (networkId: string) =>
        sql<{ id: string; state: string }>`
          SELECT id::text AS id, state FROM anchor_batches WHERE network_id = ${networkId} AND state NOT IN ('DROPPED') ORDER BY id`
      const mine = (batchId: string) =>
        sql`UPDATE anchor_batches SET state = 'MINED', tx_hash = ${`0x${batchId.padStart(64, "0")}`}, block_number = ${Number(batchId)},
            chain_batch_id = ${Number(batchId)}, anchored_at = now(), updated_at = now() WHERE id = ${batchId}`

      /** One step of a network's batches, chosen at random: a cut, or a move of one of its batches. */
      const step = (networkId: string) =>
        Effect.gen(function*() {
          const meta = networkId === "fab-sf" ? FABRIC : EVM(networkId === "evm-sf-1" ? 1 : 2)
          const hybrid = networkId === "fab-sf" ? "test" as const : undefined
          const roll = random()
          if (roll < 0.4) {
            yield* batches.cutBatch(networkId, 1 + Math.floor(random() * 25), meta, hybrid)
            return
          }
          const live = yield* open(networkId)
          if (live.length === 0) return
          const batch = pick(live)
          if (batch.state === "PENDING") {
            if (random() < 0.15) yield* batches.fail(batch.id, "given up")
            else yield* sql`UPDATE anchor_batches SET state = 'SENT' WHERE id = ${batch.id}`
          } else if (batch.state === "SENT") {
            if (random() < 0.15) yield* batches.fail(batch.id, "given up")
            else yield* mine(batch.id)
          } else if (batch.state === "MINED") {
            if (random() < 0.15) yield* batches.drop(batch.id, "reorg")
            else yield* batches.confirm(batch.id)
          } else if (batch.state === "CONFIRMED") {
            if (random() < 0.05) yield* batches.drop(batch.id, "reorg")
          } else if (batch.state === "FAILED" && random() < 0.3) {
            // Mined after all: its anchors come back (src/evm/EvmStore.ts does this in one transaction).
            yield* sql.withTransaction(Effect.gen(function*() {
              yield* mine(batch.id)
              yield* transitions.restoreFailedAnchors(batch.id)
            }))
          }
        })

      const truth = (where: Statement.Statement<any>) =>
        sql<{ id: string }>`SELECT r.id FROM records r ${stateJoin(sql)} WHERE ${where} ORDER BY r.id DESC`.pipe(
          Effect.map((rows) => rows.map((r) => r.id))
        )
      const count = (where: Statement.Statement<any>, status: RecordStatus) =>
        sql<{ n: number }>`SELECT count(*)::int AS n FROM records r WHERE ${where} AND ${inStatus(sql, status)}`.pipe(
          Effect.map((rows) => rows[0]!.n)
        )
      /** Every page of a list, `limit` at a time. */
      const pages = (owner: { accountId: string; environment: "test" | "live" }, status: RecordStatus, limit: number, chainType?: string) =>
        Effect.gen(function*() {
          const out: Array<string> = []
          let before: string | undefined
          for (;;) {
            const page = yield* records.list(owner, { limit, before, status, includeDeleted: false, chainType })
            out.push(...page.map((r) => r.id))
            if (page.length < limit) return out
            before = page[page.length - 1]!.id
          }
        })

      const check = (round: number) =>
        Effect.gen(function*() {
          const seen = new Map<string, number>()
          for (const accountId of ACCOUNTS) {
            for (const environment of ENVIRONMENTS) {
              const owner = { accountId, environment }
              const live = sql`r.account_id = ${accountId} AND r.environment = ${environment} AND r.deleted_at IS NULL`
              for (const status of STATUSES) {
                const expected = yield* truth(sql`${live} AND st.status = ${status}`)
                seen.set(status, (seen.get(status) ?? 0) + expected.length)
                const at = `seed ${SEED}, round ${round}, ${accountId}/${environment}, ${status}`
                assert.deepStrictEqual(yield* pages(owner, status, 7), expected, `list ${at}`)
                assert.deepStrictEqual(yield* pages(owner, status, 1000), expected, `one page ${at}`)
                assert.deepStrictEqual(
                  yield* pages(owner, status, 5, "hybrid"),
                  yield* truth(sql`${live} AND r.chain_type = 'hybrid' AND st.status = ${status}`),
                  `hybrid ${at}`
                )
                if (status === "QUEUED" || status === "BATCHING") {
                  assert.strictEqual(yield* count(live, status), expected.length, `console count ${at}`)
                }
              }
            }
          }
          // The metrics' queue depth: a network's QUEUED records, deleted ones included.
          for (const network of ["evm-sf-1", "evm-sf-2", "fab-sf", "evm-sf-idle"]) {
            const expected = (yield* truth(sql`r.network_id = ${network} AND st.status = 'QUEUED'`)).length
            assert.strictEqual(yield* count(sql`r.network_id = ${network}`, "QUEUED"), expected, `queue depth ${network}, round ${round}`)
          }
          return seen
        })

      const totals = new Map<string, number>()
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < 3; i++) yield* ingest(5 + Math.floor(random() * 20))
        // Records joining a live batch: the same leaves again, in a later transaction (same root).
        if (round === 3) {
          yield* batches.cutBatch("evm-sf-2", 1000, EVM(2))
          const [last] = yield* sql<{ id: string }>`
            SELECT b.id::text AS id FROM anchor_batches b WHERE b.network_id = 'evm-sf-2' AND b.state IN ('PENDING', 'SENT', 'MINED', 'CONFIRMED')
            ORDER BY b.id DESC LIMIT 1`
          if (last !== undefined) {
            const leaves = yield* sql<{ hash: string }>`
              SELECT r.hash FROM anchors a JOIN records r ON r.id = a.record_id WHERE a.batch_id = ${last.id} ORDER BY a.leaf_index`
            const again = yield* ingest(leaves.length, leaves.map((l) => l.hash))
            // evm-sf-2's queue (drained above) holds only them, in the order of the batch's leaves.
            yield* sql`UPDATE records SET chain_type = 'evm', network_id = 'evm-sf-2', environment = 'live'
              WHERE id = ANY (string_to_array(${again.map((r) => r.id).join(",")}, ','))`
            const before = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM anchors WHERE batch_id = ${last.id}`
            yield* batches.cutBatch("evm-sf-2", 1000, EVM(2))
            const after = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM anchors WHERE batch_id = ${last.id}`
            totals.set("joined", after[0]!.n - before[0]!.n)
          }
        }
        for (let i = 0; i < 12; i++) yield* step(pick(["evm-sf-1", "evm-sf-1", "evm-sf-2", "fab-sf"]))
        // Soft deletes: a deleted record is in no status list.
        if (random() < 0.5) {
          yield* sql`UPDATE records SET deleted_at = now() WHERE id = (SELECT id FROM records WHERE deleted_at IS NULL ORDER BY md5(id || ${round}) LIMIT 1)`
        }
        const seen = yield* check(round)
        for (const [s, n] of seen) totals.set(s, Math.max(totals.get(s) ?? 0, n))
      }
      // The data set was mixed: every state was met at some round, and records joined a live batch.
      for (const status of STATUSES) assert.isAbove(totals.get(status) ?? 0, 0, `no ${status} record met (seed ${SEED})`)
      assert.isAbove(totals.get("joined") ?? 0, 0, "no record joined a live batch")
    }).pipe(withStores), 240_000)
})
