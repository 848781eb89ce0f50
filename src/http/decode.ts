/**
 * Decoding a parsed value with a schema, unknown members refused: the value, or a message naming the
 * field ("records[2].data: Expected object"). The ingest fast path decodes its bodies here (the same
 * schemas as the endpoints, with the same messages).
 */
import { Exit, Schema } from "effect"
import { describeIssue } from "./schemaMessages.ts"

export type Decoded<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly message: string }

export const decodeWith = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  value: unknown,
  where = ""
): Decoded<S["Type"]> => {
  const exit = Schema.decodeUnknownExit(schema as never, { onExcessProperty: "error", errors: "all" })(value) as Exit.Exit<S["Type"], Schema.SchemaError>
  if (Exit.isSuccess(exit)) return { ok: true, value: exit.value }
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  const message = failure && "error" in failure
    ? describeIssue((failure.error as Schema.SchemaError).issue, where)
    : "Request body does not match the schema"
  return { ok: false, message }
}
