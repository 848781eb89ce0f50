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
