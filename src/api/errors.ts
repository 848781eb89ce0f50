/**
 * The wire error: every failure a client sees is `{ success: false, error, errorCode }` (SPEC 7)
 * with the status of its class. One schema class per status, so the OpenAPI document lists each
 * endpoint's statuses and the typed client decodes them back.
 */
import { Schema } from "effect"

const fields = {
  success: Schema.Literal(false),
  error: Schema.String,
  errorCode: Schema.String
}

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(fields, { httpApiStatus: 400 }) {}
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(fields, { httpApiStatus: 401 }) {}
export class NotFound extends Schema.Error<NotFound>("NotFound")(fields, { httpApiStatus: 404 }) {}
export class Conflict extends Schema.Error<Conflict>("Conflict")(fields, { httpApiStatus: 409 }) {}
export class Gone extends Schema.Error<Gone>("Gone")(fields, { httpApiStatus: 410 }) {}
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(fields, { httpApiStatus: 422 }) {}
export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")(fields, { httpApiStatus: 429 }) {}

export type ErrorCode =
  | "INVALID_JSON"
  | "VALIDATION_ERROR"
  | "INVALID_ENCRYPTION_KEY"
  | "INVALID_WEBHOOK_URL"
  | "MISSING_API_KEY"
  | "INVALID_API_KEY"
  | "EXPIRED_API_KEY"
  | "RECORD_NOT_FOUND"
  | "NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "IDEMPOTENCY_CONFLICT"
  | "NOT_ANCHORED"
  | "RECORD_DELETED"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "IMMUTABLE_FIELD"
  | "RATE_LIMIT_EXCEEDED"
  | "QUOTA_EXCEEDED"
  | "INTERNAL_ERROR"
  | "SERVICE_UNAVAILABLE"

export const errorBody = (errorCode: ErrorCode, error: string) => ({ success: false as const, error, errorCode })

type WireError = BadRequest | Unauthorized | NotFound | Conflict | Gone | Unprocessable | TooManyRequests

/** The status of a wire error: its class's `httpApiStatus` annotation (the one the OpenAPI document lists). */
export const statusOf = (error: WireError): number =>
  (error.constructor as unknown as { ast: { annotations?: { httpApiStatus?: number } } }).ast.annotations?.httpApiStatus ?? 500

export const badRequest = (errorCode: ErrorCode, error: string) => new BadRequest(errorBody(errorCode, error))
export const notFound = (error: string) => new NotFound(errorBody("RECORD_NOT_FOUND", error))
export const conflict = (errorCode: "IDEMPOTENCY_CONFLICT" | "NOT_ANCHORED", error: string) =>
  new Conflict(errorBody(errorCode, error))
export const gone = (error: string) => new Gone(errorBody("RECORD_DELETED", error))
export const unprocessable = (error: string) => new Unprocessable(errorBody("IMMUTABLE_FIELD", error))

/** Errors any authenticated endpoint may answer (the gateway middleware produces most of them). */
export const CommonErrors = [BadRequest, Unauthorized, TooManyRequests] as const
