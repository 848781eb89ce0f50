/**
 * How stores read and write rows: every statement through effect's `SqlSchema` (`findAll`, `findOne`,
 * `findOneOption`, `void`), with a row schema per row shape a store reads, declared next to the store.
 * Dynamic SQL is built from fragments (`sql\`...\``, `sql.in`, `sql.and`), never from strings.
 */
import { Cause, Effect, Schema } from "effect"

type RowDefect = Schema.SchemaError | Cause.NoSuchElementError

/**
 * A row that does not match its schema, or no row from a statement that always returns one (an INSERT
 * ... RETURNING, an aggregate), is a bug in this code, not a condition to handle: a defect. SqlError
 * stays typed: callers decide (503, a retry on the next tick).
 */
export const rowDefects = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(self, (e): e is Extract<E, RowDefect> => Schema.isSchemaError(e) || Cause.isNoSuchElementError(e), Effect.die)

// Until every store reads through SqlSchema (removed once none is left).

/**
 * Decodes the rows of a query where they are read. A row that does not match its schema is a bug in
 * this code, not a condition to handle: a defect. (SqlError stays typed: callers decide.)
 */
export const decodeRows = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<S["Type"]>> => Effect.orDie(decode(rows))
}

/** The first row decoded, or undefined. */
export const decodeFirst = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decode = decodeRows(schema)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<S["Type"] | undefined> => Effect.map(decode(rows.slice(0, 1)), (decoded) => decoded[0])
}
