/**
 * Third and fourth references for `npm run bench:ingest`: the baseline's work (bare node:http,
 * JSON.parse, RFC 8785 canonicalization, SHA-256) plus a durable group commit, and nothing else: no
 * keys, no limits, no validation, no Effect HTTP server. Requests wait in an array; one writer commits
 * all that are waiting in one statement (the node's group commit) and answers them 202 after COMMIT.
 *
 *  - mode `records`: the very statement ingest runs (`insertRecords` from src/records/IngestWriter.ts),
 *    into the node's `records` table with its indexes, checks and foreign key, counting usage. No
 *    node writing these rows can be faster than this server; its ratio to the baseline is the
 *    ceiling of the node's.
 *  - mode `minimal`: the cheapest durable row there is: id, hash and canonical text into a table with
 *    only a primary key (created here, dropped at exit). The ceiling of any PostgreSQL-backed design.
 *
 * Both wait for the commit (synchronous_commit on) before answering, as the node does.
 *
 * argv: port, mode. env: DATABASE_URL, ACCOUNT_ID (an account of the bench), NETWORK_ID.
 */
import * as Http from "node:http"
import { Effect, ManagedRuntime, Redacted, Result } from "effect"
import { PgClient, PgTypes } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import { currentMonth } from "../../src/auth/plans.ts"
import { canonicalize } from "../../src/canonical/jcs.ts"
import { sha256Hex } from "../../src/records/Ingest.ts"
import { insertRecords, type NewRecord } from "../../src/records/insertRecords.ts"
import { newRecordId } from "../../src/records/ids.ts"

const port = Number(process.argv[2] ?? 8092)
const mode = process.argv[3] === "minimal" ? "minimal" : "records"
const accountId = process.env.ACCOUNT_ID ?? ""
const networkId = process.env.NETWORK_ID ?? ""
const MAX_GROUP = 512 // INGEST_MAX_BATCH's default
const TABLE = "bench_ingest_minimal"

const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL ?? ""), maxConnections: 2 }))
const sql = await runtime.runPromise(Effect.gen(function*() {
  return yield* SqlClient.SqlClient
}))
if (mode === "minimal") {
  await runtime.runPromise(sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (id text PRIMARY KEY, hash text NOT NULL, data_jcs text NOT NULL)`)
}

interface Waiting {
  readonly row: NewRecord
  readonly res: Http.ServerResponse
}
const waiting: Array<Waiting> = []
let writing = false

/** A text[] parameter in PostgreSQL's binary format, as ingest binds its columns. */
const texts = (values: ReadonlyArray<string | null>) => Result.getOrThrow(PgTypes.array(values, PgTypes.OID.text))

const commit = (group: ReadonlyArray<Waiting>) => {
  const rows = group.map((w) => w.row)
  return mode === "records"
    ? insertRecords(sql, rows, currentMonth(Date.now()).month)
    : sql`INSERT INTO ${sql(TABLE)} (id, hash, data_jcs) SELECT * FROM unnest(
        ${texts(rows.map((r) => r.id))}::text[], ${texts(rows.map((r) => r.hash))}::text[], ${texts(rows.map((r) => r.dataJcs))}::text[])`
}

const write = () => {
  if (writing || waiting.length === 0) return
  writing = true
  const group = waiting.splice(0, MAX_GROUP)
  runtime.runPromise(commit(group)).then(
    () => {
      for (const { row, res } of group) {
        res.writeHead(202, { "content-type": "application/json" })
        res.end(`{"success":true,"data":{"recordId":"${row.id}","hash":"${row.hash}","status":"QUEUED"}}`)
      }
    },
    (error) => {
      console.error(`[commit-ceiling] commit failed: ${String(error).slice(0, 300)}`)
      for (const { res } of group) {
        res.writeHead(500, { "content-type": "application/json" })
        res.end("{\"success\":false,\"error\":\"commit failed\",\"errorCode\":\"INTERNAL_ERROR\"}")
      }
    }
  ).finally(() => {
    writing = false
    write()
  })
}

const server = Http.createServer((req, res) => {
  if (req.method === "GET") return void res.end("ok")
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    let jcs: string
    try {
      jcs = canonicalize(JSON.parse(Buffer.concat(chunks).toString("utf8")).data)
    } catch {
      res.writeHead(400, { "content-type": "application/json" })
      return void res.end("{\"success\":false,\"error\":\"bad\",\"errorCode\":\"INVALID_JSON\"}")
    }
    const now = new Date()
    waiting.push({
      row: {
        id: newRecordId(now.getTime()),
        accountId,
        environment: "test",
        hash: sha256Hex(jcs),
        chainType: "evm",
        networkId,
        packageMode: "MANAGED",
        source: "data",
        dataJcs: jcs,
        ciphertext: null,
        nonce: null,
        authTag: null,
        metadata: {},
        webhookUrl: null,
        collection: null,
        createdAt: now,
        updatedAt: now,
        salted: false
      },
      res
    })
    write()
  })
})
server.keepAliveTimeout = 65_000
server.listen(port, "127.0.0.1")

process.on("SIGTERM", () => {
  server.close()
  server.closeAllConnections()
  const drop = mode === "minimal" ? runtime.runPromise(sql`DROP TABLE IF EXISTS ${sql(TABLE)}`) : Promise.resolve()
  void drop.finally(() => runtime.dispose()).finally(() => process.exit(0))
})
