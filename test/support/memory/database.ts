/**
 * The database as the handler tests have it: none. `NoDatabase` is a SqlClient every statement of which
 * fails as an unreachable PostgreSQL's does (the client's ConnectionError), and it keeps what was tried:
 * the few services that take the SqlClient itself get one, and a test can tell that no request reached
 * SQL. `DatabaseGuardMemory` is the circuit breaker (src/db/guard.ts) without a probe: up until a test
 * takes it down (`MemoryDatabase.setUp(false)`), so the 503 of a database known to be down is testable.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Stream, SubscriptionRef } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection, SqlError } from "effect/sql"
import { DatabaseGuard, type DatabaseState, DatabaseUnavailable } from "../../../src/db/guard.ts"

export class MemoryDatabase extends Context.Service<MemoryDatabase, {
  /** The statements tried on `NoDatabase`, in order. */
  readonly attempted: ReadonlyArray<string>
  /** Opens (false) or closes (true) the breaker, as the guard's probe would. */
  readonly setUp: (up: boolean) => Effect.Effect<void>
}>()("anchord/test/MemoryDatabase") {}

const unreachable = (attempted: Array<string>) => (sql: string) =>
  Effect.suspend(() => {
    attempted.push(sql)
    return Effect.fail(
      new SqlError.SqlError({
        reason: new SqlError.ConnectionError({ cause: new Error("no database in the handler tests"), message: "no database in the handler tests" })
      })
    )
  })

/** The SqlClient, the breaker and their switch (one layer: the guard's state is the switch's). */
export const NoDatabase = Layer.effectContext(Effect.gen(function*() {
  const attempted: Array<string> = []
  const refuse = unreachable(attempted)
  const connection: SqlConnection.Connection = {
    execute: refuse,
    executeRaw: refuse,
    executeStream: (sql) => Stream.fromEffect(refuse(sql)),
    executeValues: refuse,
    executeValuesUnprepared: refuse,
    executeUnprepared: refuse
  }
  const sql = yield* SqlClient.make({ acquirer: Effect.succeed(connection), compiler: PgClient.makeCompiler(), driver: "none", spanAttributes: [] })

  const retryAfterSeconds = 1
  const unavailable = new DatabaseUnavailable({ retryAfterSeconds })
  const state = yield* SubscriptionRef.make<DatabaseState>({
    status: "up",
    latencyMs: 1,
    since: 0,
    refused: 0
  })
  let up = true
  const guard = DatabaseGuard.of({
    state,
    isUp: () => up,
    refuse: Effect.andThen(SubscriptionRef.update(state, (s) => ({ ...s, refused: s.refused + 1 })), Effect.fail(unavailable)),
    // Nothing here waits: the bound never fires.
    bounded: (effect) => effect,
    retryAfterSeconds,
    probeSoon: Effect.void,
    timedOut: () => unavailable
  })
  const control = MemoryDatabase.of({
    attempted,
    setUp: (next) =>
      Effect.andThen(
        Effect.sync(() => void (up = next)),
        SubscriptionRef.update(state, (s) => ({ ...s, status: next ? "up" as const : "down" as const, latencyMs: next ? 1 : null, refused: 0 }))
      )
  })
  return Context.make(SqlClient.SqlClient, sql).pipe(Context.add(DatabaseGuard, guard), Context.add(MemoryDatabase, control))
})).pipe(Layer.provide(Reactivity.layer))
