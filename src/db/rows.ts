/** Rows of a query decoded by a schema where they are read (off the hot path: reads, not ingest). */
import { Effect, Schema } from "effect"

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
