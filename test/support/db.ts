/** A fresh, empty database per test file on the suite's PostgreSQL server. */
import * as Crypto from "node:crypto"
import { inject } from "vitest"
import { Effect, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"

export const adminUrl = (): string => inject("pgAdminUrl")

export const withDatabase = (url: string, name: string): string => {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/** Runs `f` with a SqlClient on `url` (the suite's server by default), closing its pool after. */
const withSql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>, url = adminUrl()) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* f(sql)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })))))

export const dropTestDatabases = (url: string) =>
  withSql((sql) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ datname: string }>`SELECT datname FROM pg_database WHERE datname LIKE 'anchord_test_%'`
      for (const { datname } of rows) yield* sql.unsafe(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`)
    }), url)

/** Creates `anchord_test_<random>` and returns its URL. */
export const freshDatabase = async (): Promise<string> => {
  const name = `anchord_test_${Crypto.randomBytes(6).toString("hex")}`
  await withSql((sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  return withDatabase(adminUrl(), name)
}

/** Runs SQL against a test database (for arranging state a test needs, and for asserting on rows). */
export const query = <A extends object = Record<string, unknown>>(url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  withSql((sql) => sql.unsafe<A>(text, params as Array<unknown>), url)

/** The plan PostgreSQL picks for `text`, with sequential scans ruled out (a small test table would
 * otherwise always be scanned): shows whether an index can answer the query at all. */
export const indexPlan = (url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  withSql((sql) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe("SET LOCAL enable_seqscan = off")
      const rows = yield* sql.unsafe<Record<string, string>>(`EXPLAIN ${text}`, params as Array<unknown>)
      return rows.map((row) => Object.values(row)[0]).join("\n")
    })), url)
