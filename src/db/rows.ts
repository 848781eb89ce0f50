/**
 * How stores read and write rows: every statement through effect's `SqlSchema` (`findAll`, `findOne`,
 * `findOneOption`, `void`), with a row schema per row shape a store reads, declared next to the store.
 * Dynamic SQL is built from fragments (`sql\`...\``, `sql.in`, `sql.and`), never from strings.
 */
import { Cause, Effect, Result, Schema } from "effect"
import { PgTypes } from "@effect/sql-pg"
import type { SqlError } from "effect/sql"

type RowDefect = Schema.SchemaError | Cause.NoSuchElementError

/**
 * A row that does not match its schema, or no row from a statement that always returns one (an INSERT
 * ... RETURNING, an aggregate), is a bug in this code, not a condition to handle: a defect. SqlError
 * stays typed: callers decide (503, a retry on the next tick).
 */
export const rowDefects = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(self, (e): e is Extract<E, RowDefect> => Schema.isSchemaError(e) || Cause.isNoSuchElementError(e), Effect.die)

/** A store method's effect: its value, its own errors `E`, and `SqlError` (the database, left to callers). */
export type SqlEffect<A, E = never> = Effect.Effect<A, E | SqlError.SqlError>

/** Values as one PostgreSQL array parameter in the binary format (`elementOid`: the element type, `PgTypes.OID`). */
export const binaryArray = (values: ReadonlyArray<unknown>, elementOid: number) => Result.getOrThrow(PgTypes.array(values, elementOid))
