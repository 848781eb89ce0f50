/**
 * Decoding a strictly parsed request body with an endpoint's schema: the value, or the 400
 * VALIDATION_ERROR whose message names the field (unknown fields are refused too).
 */
import { Effect, Exit, Schema } from "effect"
import { badRequest, type BadRequest } from "../api/errors.ts"
import { describeIssue } from "./schemaMessages.ts"

/** Decodes a strictly parsed body: the value, or the 400 VALIDATION_ERROR naming the field (unknown fields too). */
export const decodeOrError = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  value: unknown,
  where: string
): { readonly ok: true; readonly value: S["Type"] } | { readonly ok: false; readonly error: BadRequest } => {
  const exit = Schema.decodeUnknownExit(schema as never, { onExcessProperty: "error", errors: "all" })(value) as Exit.Exit<S["Type"], Schema.SchemaError>
  if (Exit.isSuccess(exit)) return { ok: true, value: exit.value }
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  const message = failure && "error" in failure
    ? describeIssue((failure.error as Schema.SchemaError).issue, where)
    : "Request body does not match the schema"
  return { ok: false, error: badRequest("VALIDATION_ERROR", message) }
}

/** decodeOrError as an Effect. */
export const decodeBody = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  value: unknown,
  where = ""
): Effect.Effect<S["Type"], BadRequest> => {
  const decoded = decodeOrError(schema, value, where)
  return decoded.ok ? Effect.succeed(decoded.value) : Effect.fail(decoded.error)
}

