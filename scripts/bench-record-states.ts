/**
 * The status filters at 1M records (issue 26, docs/design/per-batch-model.md "Status filters without a
 * probe per record in flight"): the first page of `GET /v1/records?status=…` (RecordStore.list's
 * statement), the console's in-flight counts and the metrics' queue depth, each run with the fragments
 * of migration 0016 ("old", copied below as they were) and with src/anchoring/recordState.ts ("new"),
 * side by side on the same data, as EXPLAIN (ANALYZE, BUFFERS): buffers (hit + read) and time.
 *
 * Data (like docs/benchmarks/runs.md, 2026-11-26, "record state read from its batch"): 1,000,000 records of
 * one EVM network in 995 batches of 1,000 (990 CONFIRMED, 5 SENT), every 500th record FAILED, the newest
 * 5,000 QUEUED in 50 later transactions with the network's cursor before them; 90% of the records in
 * `acc_big` (9,000 in flight), 10% in `acc_small` (1,000). Proofs are empty arrays (anchor rows narrower
 * than real ones: the old fragment's per-record probe is cheaper here than in production). Scenario
 * "idle network" adds a second network whose cursor never moved (a network no batcher serves).
 *
 * DATABASE_URL: a server where a scratch database `anchord_bench_states` may be made and dropped
 * (default: the local PostgreSQL 15, postgres@127.0.0.1:5432). Timings on a shared machine are noisy:
 * compare the columns of one run; the buffers are the stable figure.
 *
 *   node scripts/bench-record-states.ts
 */
import { PgClient } from "@effect/sql-pg"
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { inStatus, listedInStatus, mayBeQueuedRange, recordColumns, type RecordStatus, stateJoin } from "../src/anchoring/recordState.ts"
import { MigrationsLayer } from "../src/db/Database.ts"

type Sql = SqlClient.SqlClient
type Stmt = Statement.Statement<any>

const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const DB = "anchord_bench_states"
const RECORDS = 1_000_000
const BATCH = 1_000
const CONFIRMED_BATCHES = 990
const SENT_BATCHES = 5
const QUEUED = 5_000
const QUEUED_TXS = 50
const REPEAT = 3

const dbUrl = (name: string) => {
  const u = new URL(SERVER)
  u.pathname = `/${name}`
  return u.toString()
}
const client = (url: string) => PgClient.layer({ url: Redacted.make(url), maxConnections: 2, startupParameters: { jit: "off" } })

// Migration 0016's fragments, as they were before migration 0020 (the baseline of the comparison).
const oldMayBeQueued = (sql: Sql) => sql`r.status = 'QUEUED' AND r.insert_xid >= (SELECT COALESCE(min(after_xid), 0) FROM queue_cursors)`
const oldMayBeBatching = (sql: Sql) =>
  sql`r.id IN (SELECT a.record_id FROM anchor_batches b JOIN anchors a ON a.batch_id = b.id
    WHERE b.state IN ('PENDING', 'SENT', 'MINED'))`
const oldInStatus = (sql: Sql, status: RecordStatus) =>
  status === "FAILED"
    ? sql`r.status = 'FAILED'`
    : status === "QUEUED"
    ? sql`${oldMayBeQueued(sql)} AND st.status = 'QUEUED'`
    : status === "BATCHING"
    ? sql`r.status = 'QUEUED' AND ${oldMayBeBatching(sql)} AND st.status = 'BATCHING'`
    : sql`r.status = 'QUEUED' AND st.status = 'ANCHORED'`

/** RecordStore.list's statement, first page (LIMIT 51), with the old or the new filter. */
const listPage = (sql: Sql, account: string, status: RecordStatus, which: "old" | "new") =>
  sql`
    SELECT ${recordColumns(sql)} FROM records r ${stateJoin(sql)}
    WHERE r.account_id = ${account} AND r.environment = 'test' AND r.deleted_at IS NULL
      AND ${which === "old" ? oldInStatus(sql, status) : listedInStatus(sql, status)}
    ORDER BY r.id DESC LIMIT 51`

/** ConsoleStats.byStatus's in-flight counts: the old ones joined the state for every candidate. */
const consoleCounts = (sql: Sql, account: string, which: "old" | "new") => {
  const live = sql`r.account_id = ${account} AND r.environment = 'test' AND r.deleted_at IS NULL`
  return which === "old"
    ? sql`SELECT (SELECT count(*)::int FROM records r ${stateJoin(sql)} WHERE ${live} AND ${oldInStatus(sql, "QUEUED")}) AS queued,
        (SELECT count(*)::int FROM records r ${stateJoin(sql)} WHERE ${live} AND ${oldInStatus(sql, "BATCHING")}) AS batching`
    : sql`SELECT (SELECT count(*)::int FROM (SELECT * FROM records r WHERE ${mayBeQueuedRange(sql)} OFFSET 0) r
          WHERE ${live} AND ${inStatus(sql, "QUEUED")}) AS queued,
        (SELECT count(*)::int FROM records r WHERE ${live} AND ${inStatus(sql, "BATCHING")}) AS batching`
}

/** The metrics' queue depth of a network (src/app/metrics.ts, capped count). */
const queueDepth = (sql: Sql, network: string, which: "old" | "new") =>
  which === "old"
    ? sql`SELECT count(*)::int FROM (SELECT 1 FROM records r ${stateJoin(sql)}
        WHERE r.network_id = ${network} AND ${oldInStatus(sql, "QUEUED")} LIMIT 1000000) q`
    : sql`SELECT count(*)::int FROM (SELECT 1 FROM records r
        WHERE r.network_id = ${network} AND ${inStatus(sql, "QUEUED")} LIMIT 1000000) q`

interface Measure {
  readonly buffers: number
  readonly ms: number
  readonly rows: number
}

/** EXPLAIN (ANALYZE, BUFFERS) of a statement: its buffers (hit + read), the median time of REPEAT runs, its rows. */
const explain = (sql: Sql, statement: Stmt, repeat: number) =>
  Effect.gen(function*() {
    const runs: Array<Measure> = []
    for (let i = 0; i < repeat + 1; i++) {
      const rows = yield* sql<{ queryPlan: unknown }>`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement}`
      const raw = Object.values(rows[0]!)[0]
      const plan = (typeof raw === "string" ? JSON.parse(raw) : raw) as Array<{ Plan: Record<string, number>; "Execution Time": number }>
      const top = plan[0]!
      // Buffers of the whole statement: the top node's, plus its initplans' (counted in the top node).
      const buffers = (top.Plan["Shared Hit Blocks"] ?? 0) + (top.Plan["Shared Read Blocks"] ?? 0)
      if (i > 0) runs.push({ buffers, ms: top["Execution Time"], rows: top.Plan["Actual Rows"] ?? 0 })
    }
    runs.sort((a, b) => a.ms - b.ms)
    return runs[Math.floor(runs.length / 2)]!
  })

/** The rows of both forms, to check they agree. */
const ids = (sql: Sql, statement: Stmt) => Effect.map(sql<Record<string, unknown>>`${statement}`, (rows) => JSON.stringify(rows.map((r) => r.id ?? r)))

const load = (sql: Sql) =>
  Effect.gen(function*() {
    const t0 = Date.now()
    yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_big', 'big', 'ENTERPRISE'), ('acc_small', 'small', 'ENTERPRISE')`
    const settled = RECORDS - QUEUED
    // One transaction: the records already cut (one insert_xid, as after an upgrade).
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`
        INSERT INTO records (id, account_id, environment, hash, status, chain_type, network_id, package_mode, source, created_at)
        SELECT lpad(to_hex(i), 24, '0'), CASE WHEN i % 10 = 0 THEN 'acc_small' ELSE 'acc_big' END, 'test',
          md5(i::text) || md5((-i)::text), CASE WHEN i % 500 = 0 THEN 'FAILED' ELSE 'QUEUED' END, 'evm', 'evm-bench',
          'SEPARATED', 'hash', now() - interval '2 days' + i * interval '100 milliseconds'
        FROM generate_series(1, ${settled}) i`
      yield* sql`
        INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address,
          chain_batch_id, tx_hash, block_number, anchored_at, confirmed_at, max_insert_xid)
        SELECT 'evm-bench', 'evm', '0x' || md5(b::text) || md5((-b)::text), ${BATCH},
          CASE WHEN b <= ${CONFIRMED_BATCHES} THEN 'CONFIRMED' ELSE 'SENT' END, 31337, '0x' || repeat('ab', 20), b,
          '0x' || md5(b::text) || md5(b::text), b, CASE WHEN b <= ${CONFIRMED_BATCHES} THEN now() END,
          CASE WHEN b <= ${CONFIRMED_BATCHES} THEN now() END, pg_current_xact_id()::text::numeric
        FROM generate_series(1, ${CONFIRMED_BATCHES + SENT_BATCHES}) b`
      // Batch b holds records (b-1)*1000+1 .. b*1000 (the FAILED ones' anchors went to failed_anchors).
      yield* sql`
        INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof)
        SELECT lpad(to_hex(i), 24, '0'), 'evm-bench', 'evm', b.id, (i - 1) % ${BATCH}, '{}'
        FROM generate_series(1, ${settled}) i
        JOIN anchor_batches b ON b.chain_batch_id = (i - 1) / ${BATCH} + 1 AND b.network_id = 'evm-bench'
        WHERE i % 500 <> 0`
    }))
    // The backlog: QUEUED_TXS transactions, each its own insert_xid; the cursor before the first.
    const per = QUEUED / QUEUED_TXS
    for (let t = 0; t < QUEUED_TXS; t++) {
      const from = settled + t * per + 1
      yield* sql`
        INSERT INTO records (id, account_id, environment, hash, status, chain_type, network_id, package_mode, source, created_at)
        SELECT lpad(to_hex(i), 24, '0'), CASE WHEN i % 10 = 0 THEN 'acc_small' ELSE 'acc_big' END, 'test',
          md5(i::text) || md5((-i)::text), 'QUEUED', 'evm', 'evm-bench', 'SEPARATED', 'hash',
          now() - interval '2 days' + i * interval '100 milliseconds'
        FROM generate_series(${from}, ${from + per - 1}) i`
    }
    yield* sql`
      INSERT INTO queue_cursors (network_id, after_xid, after_id)
      SELECT 'evm-bench', insert_xid, id FROM records WHERE id = ${(settled + 1).toString(16).padStart(24, "0")}`
    yield* sql`VACUUM ANALYZE records`
    yield* sql`VACUUM ANALYZE anchors`
    yield* sql`VACUUM ANALYZE anchor_batches`
    yield* sql`VACUUM ANALYZE queue_cursors`
    return (Date.now() - t0) / 1000
  })

const scenario = (sql: Sql, title: string, repeat: number) =>
  Effect.gen(function*() {
    console.log(`\n### ${title}\n`)
    console.log("| statement | account | old: buffers / ms | new: buffers / ms | buffers new ÷ old | same rows |")
    console.log("|---|---|---:|---:|---:|---|")
    const row = (name: string, account: string, old: Stmt, neu: Stmt) =>
      Effect.gen(function*() {
        const o = yield* explain(sql, old, repeat)
        const n = yield* explain(sql, neu, repeat)
        const same = (yield* ids(sql, old)) === (yield* ids(sql, neu))
        console.log(
          `| ${name} | ${account} | ${o.buffers} / ${o.ms.toFixed(2)} | ${n.buffers} / ${n.ms.toFixed(2)} | ${(n.buffers / o.buffers).toFixed(3)} | ${
            same ? "yes" : "**NO**"
          } |`
        )
      })
    for (const account of ["acc_big", "acc_small"]) {
      for (const status of ["ANCHORED", "BATCHING", "QUEUED", "FAILED"] as const) {
        yield* row(`list ?status=${status}, first page`, account, listPage(sql, account, status, "old"), listPage(sql, account, status, "new"))
      }
      yield* row("console in-flight counts (QUEUED, BATCHING)", account, consoleCounts(sql, account, "old"), consoleCounts(sql, account, "new"))
    }
    yield* row("metrics queue depth (evm-bench)", "—", queueDepth(sql, "evm-bench", "old"), queueDepth(sql, "evm-bench", "new"))
  })

/**
 * The stored-status era, emulated on the same data: a column holding the state as 0015 stored it (the
 * in-flight rows updated to it, as the cut and the confirmation then did, so they sit where such updates
 * put them), and ANCHORED's first page read from it, beside the new filter on the same heap.
 */
const storedEra = (sql: Sql) =>
  Effect.gen(function*() {
    yield* sql`ALTER TABLE records ADD COLUMN IF NOT EXISTS stored_status text NOT NULL DEFAULT 'ANCHORED'`
    yield* sql`
      UPDATE records r SET stored_status = st.status FROM records q ${sql`CROSS JOIN LATERAL anchord_record_state(q.id, q.status, q.chain_type) st`}
      WHERE q.id = r.id AND (q.status = 'FAILED' OR q.id IN (
        SELECT id FROM records WHERE insert_xid >= (SELECT min(after_xid) FROM queue_cursors)
        UNION SELECT a.record_id FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE b.state IN ('PENDING', 'SENT', 'MINED')))`
    yield* sql`VACUUM ANALYZE records`
    console.log("\n### the stored-status era (emulated: a stored column, in-flight rows updated to it)\n")
    console.log("| statement | account | stored status: buffers / ms | new: buffers / ms | buffers new ÷ stored | same rows |")
    console.log("|---|---|---:|---:|---:|---|")
    for (const account of ["acc_big", "acc_small"]) {
      const stored = sql`
        SELECT r.id, r.account_id, r.environment, r.hash, r.stored_status AS status, r.chain_type, r.network_id, r.package_mode,
          r.collection, r.source, r.data_jcs, r.ciphertext, r.nonce, r.auth_tag, r.metadata, r.webhook_url, r.created_at,
          r.updated_at, r.deleted_at, r.hard_deleted, r.salted
        FROM records r
        WHERE r.account_id = ${account} AND r.environment = 'test' AND r.deleted_at IS NULL AND r.stored_status = 'ANCHORED'
        ORDER BY r.id DESC LIMIT 51`
      const neu = listPage(sql, account, "ANCHORED", "new")
      const o = yield* explain(sql, stored, REPEAT)
      const n = yield* explain(sql, neu, REPEAT)
      const same = (yield* ids(sql, stored)) === (yield* ids(sql, neu))
      console.log(
        `| list ?status=ANCHORED, first page | ${account} | ${o.buffers} / ${o.ms.toFixed(2)} | ${n.buffers} / ${n.ms.toFixed(2)} | ${
          (n.buffers / o.buffers).toFixed(3)
        } | ${same ? "yes" : "**NO**"} |`
      )
    }
  })

const main = Effect.gen(function*() {
  // REUSE=1 (with KEEP=1 on the run before): the data of an earlier run, not loaded again.
  const reuse = process.env.REUSE !== undefined
  yield* Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (reuse) return
    yield* sql.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`)
    yield* sql.unsafe(`CREATE DATABASE ${DB}`)
  }).pipe(Effect.provide(client(SERVER))))
  const url = dbUrl(DB)
  yield* Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [version] = yield* sql<{ v: string }>`SELECT current_setting('server_version') AS v`
    console.log(`PostgreSQL ${version!.v}, ${RECORDS.toLocaleString("en")} records`)
    if (reuse) yield* sql`DELETE FROM queue_cursors WHERE network_id = 'evm-idle'`
    if (reuse && process.env.STORED !== undefined) return yield* storedEra(sql)
    else console.log(`loaded in ${(yield* load(sql)).toFixed(0)} s`)
    if (process.env.PLAN !== undefined) {
      // PLAN=<status>: the text plans of that status' first page (acc_big), old and new, and nothing else.
      const status = process.env.PLAN as RecordStatus
      for (const which of ["old", "new"] as const) {
        const statement = status === ("COUNTS" as RecordStatus) ? consoleCounts(sql, "acc_big", which) : listPage(sql, "acc_big", status, which)
        const rows = yield* sql<Record<string, string>>`EXPLAIN (ANALYZE, BUFFERS) ${statement}`
        console.log(`--- ${which}\n${rows.map((r) => Object.values(r)[0]).join("\n")}`)
      }
      return
    }
    yield* scenario(sql, "one network (evm-bench), its cursor before the 5,000 queued", REPEAT)
    // A network whose cursor never moved (no batcher serves it): the oldest cursor is 0, every record
    // is after it; the old QUEUED candidates are the whole table, the new ones its own network's queue.
    yield* sql`INSERT INTO queue_cursors (network_id, after_xid, after_id) VALUES ('evm-idle', 0, '')`
    yield* scenario(sql, "and a second network whose cursor never moved (evm-idle, cursor 0)", 1)
    yield* sql`DELETE FROM queue_cursors WHERE network_id = 'evm-idle'`
    yield* storedEra(sql)
  }).pipe(Effect.provide(Layer.provideMerge(MigrationsLayer, client(url)).pipe(Layer.provide(NodeServices.layer)))))
  if (process.env.KEEP === undefined) {
    yield* Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`)
    }).pipe(Effect.provide(client(SERVER))))
  }
})

Effect.runPromise(main).catch((e) => {
  console.error(e)
  process.exit(1)
})
