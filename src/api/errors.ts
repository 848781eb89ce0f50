/**
 * The wire errors (SPEC 7). Every failure a client sees is `{ success: false, error, errorCode }`
 * with the status that its code has in SPEC 7's table: one class per status, whose `errorCode` is a
 * schema of the literals of that status, so the OpenAPI document lists every code and the typed
 * client decodes each body back into its class. 429 and 503 also carry `Retry-After`.
 *
 * Capabilities fail with their own domain errors (`Schema.TaggedError`s that name their SPEC code
 * and say what happened); `toWire` is the one mapping from a domain error to its wire error, applied
 * at the edge (the handlers, the gateway).
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** Every error code by status (SPEC 7). The status of a code is fixed: `statusOf` reads it here. */
export const ERROR_CODES = {
  // CHAIN_NOT_CONFIGURED: a record for a chain no network of this node anchors in the key's
  // environment (refused rather than left QUEUED forever); 400 like the other refused fields, which
  // every record-creating endpoint already declares.
  400: ["INVALID_JSON", "VALIDATION_ERROR", "INVALID_ENCRYPTION_KEY", "INVALID_WEBHOOK_URL", "INVALID_LINK", "CHAIN_NOT_CONFIGURED"],
  401: ["MISSING_API_KEY", "INVALID_API_KEY", "EXPIRED_API_KEY", "INVALID_CREDENTIALS", "NOT_SIGNED_IN", "SESSION_EXPIRED"],
  // The console (SPEC 9): a role that may not do this, a state change without its CSRF token, a
  // change in a suspended account (read-only).
  403: ["FORBIDDEN", "CSRF_TOKEN_INVALID", "ACCOUNT_SUSPENDED"],
  404: ["RECORD_NOT_FOUND", "NOT_FOUND"],
  405: ["METHOD_NOT_ALLOWED"],
  409: ["IDEMPOTENCY_CONFLICT", "NOT_ANCHORED", "ACCOUNT_NOT_ACTIVE", "EMAIL_TAKEN"],
  410: ["RECORD_DELETED"],
  413: ["PAYLOAD_TOO_LARGE"],
  415: ["UNSUPPORTED_MEDIA_TYPE"],
  422: ["IMMUTABLE_FIELD", "CERTIFICATE_TOO_LARGE"],
  // Request headers past node:http's limit (RFC 6585): answered before any route, so no operation declares it.
  431: ["HEADERS_TOO_LARGE"],
  429: ["RATE_LIMIT_EXCEEDED", "QUOTA_EXCEEDED", "SIGN_IN_THROTTLED"],
  500: ["INTERNAL_ERROR"],
  503: ["SERVICE_UNAVAILABLE"]
} as const

type Codes = typeof ERROR_CODES
export type ErrorStatus = keyof Codes
export type CodesOf<S extends ErrorStatus> = Codes[S][number]
export type ErrorCode = CodesOf<ErrorStatus>

const ALL_CODES = Object.values(ERROR_CODES).flat() as Array<ErrorCode>

export const ErrorCode = Schema.Literals(ALL_CODES as [ErrorCode, ...Array<ErrorCode>]).annotate({
  identifier: "ErrorCode",
  description: "Machine-readable error code; the status of each is fixed (SPEC 7)"
})

const STATUS = new Map<string, ErrorStatus>(
  (Object.entries(ERROR_CODES) as Array<[string, ReadonlyArray<ErrorCode>]>).flatMap(([s, codes]) => codes.map((c) => [c, Number(s) as ErrorStatus]))
)

/** The HTTP status of an error code. */
export const statusOf = (code: ErrorCode): ErrorStatus => STATUS.get(code)!

/** The error body (SPEC 3: exactly these three members). */
export const errorBody = <C extends ErrorCode>(errorCode: C, error: string) => ({ success: false as const, error, errorCode })

const codesOf = <S extends ErrorStatus>(status: S) => {
  const codes = ERROR_CODES[status] as unknown as [CodesOf<S>, ...Array<CodesOf<S>>]
  // One code: a plain literal (a union of one is an `anyOf` of one in the OpenAPI document).
  return (codes.length === 1 ? Schema.Literal(codes[0]) : Schema.Literals(codes)) as Schema.Literals<[CodesOf<S>, ...Array<CodesOf<S>>]>
}

const bodyFields = <S extends ErrorStatus>(status: S) => ({
  success: Schema.Literal(false),
  error: Schema.String,
  errorCode: codesOf(status)
})

const wire = <S extends ErrorStatus>(status: S, description: string) => [bodyFields(status), { httpApiStatus: status, description }] as const

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(...wire(400, "The request is malformed or does not match the schema")) {}
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(...wire(401, "No valid API key (the API), or not signed in (the console)")) {}
export class Forbidden
  extends Schema.Error<Forbidden>("Forbidden")(...wire(403, "Signed in, but this user's role may not do this, or a state change came without its CSRF token"))
{}
export class NotFound extends Schema.Error<NotFound>("NotFound")(...wire(404, "No such record, resource or route")) {}
export class MethodNotAllowed extends Schema.Error<MethodNotAllowed>("MethodNotAllowed")(...wire(405, "The path exists, the method does not (see Allow)")) {}
export class Conflict extends Schema.Error<Conflict>("Conflict")(
  ...wire(409, "Idempotency-Key reused with another body, the record is not anchored yet, or the state does not allow it")
) {}
export class Gone extends Schema.Error<Gone>("Gone")(...wire(410, "The record was deleted")) {}
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(...wire(413, "The request body is larger than the limit")) {}
export class UnsupportedMediaType extends Schema.Error<UnsupportedMediaType>("UnsupportedMediaType")(...wire(415, "The body must be application/json")) {}
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(
  ...wire(422, "The request changes an immutable field, or the certificate's QR code cannot hold the proof")
) {}
export class HeadersTooLarge extends Schema.Error<HeadersTooLarge>("HeadersTooLarge")(...wire(431, "The request's header fields are larger than the limit")) {}
export class InternalError extends Schema.Error<InternalError>("InternalError")(...wire(500, "An unexpected error; the message never carries internals")) {}

/** 429 and 503 say when to come back: `Retry-After` (seconds), carried by the error as `retryAfter`. */
const withRetryAfter = <S extends 429 | 503>(status: S, identifier: string, description: string) => {
  class Value extends Schema.Error<Value>(identifier)({ ...bodyFields(status), retryAfter: Schema.Number }) {}
  const schema = Value.pipe(HttpApiSchema.encodeToWithHeaders({
    body: Schema.Struct(bodyFields(status)).annotate({ identifier, description, httpApiStatus: status }),
    headers: { "retry-after": Schema.NumberFromString.annotate({ description: "Seconds to wait before retrying" }) }
  }, {
    decode: ({ body, headers }) => new Value({ ...body, retryAfter: headers["retry-after"] }),
    encode: (e) => ({ body: { success: false as const, error: e.error, errorCode: e.errorCode }, headers: { "retry-after": e.retryAfter } })
  }))
  return { Value, schema }
}

const TooManyRequestsWire = withRetryAfter(429, "TooManyRequests", "Per-second rate limit or monthly quota exceeded, or too many failed sign-ins")
const ServiceUnavailableWire = withRetryAfter(503, "ServiceUnavailable", "A dependency (the database) is unavailable")

/** 429 RATE_LIMIT_EXCEEDED / QUOTA_EXCEEDED with Retry-After. Declare endpoints with `TooManyRequests.schema`. */
export const TooManyRequests = TooManyRequestsWire.Value
export type TooManyRequests = InstanceType<typeof TooManyRequests>
export const TooManyRequestsSchema = TooManyRequestsWire.schema
/** 503 SERVICE_UNAVAILABLE with Retry-After. Declare endpoints with `ServiceUnavailableSchema`. */
export const ServiceUnavailable = ServiceUnavailableWire.Value
export type ServiceUnavailable = InstanceType<typeof ServiceUnavailable>
export const ServiceUnavailableSchema = ServiceUnavailableWire.schema

export type WireError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | MethodNotAllowed
  | Conflict
  | Gone
  | PayloadTooLarge
  | UnsupportedMediaType
  | Unprocessable
  | HeadersTooLarge
  | TooManyRequests
  | InternalError
  | ServiceUnavailable

/** The wire error class of each code. */
export type WireFor<C extends ErrorCode> = C extends CodesOf<400> ? BadRequest
  : C extends CodesOf<401> ? Unauthorized
  : C extends CodesOf<403> ? Forbidden
  : C extends CodesOf<404> ? NotFound
  : C extends CodesOf<405> ? MethodNotAllowed
  : C extends CodesOf<409> ? Conflict
  : C extends CodesOf<410> ? Gone
  : C extends CodesOf<413> ? PayloadTooLarge
  : C extends CodesOf<415> ? UnsupportedMediaType
  : C extends CodesOf<422> ? Unprocessable
  : C extends CodesOf<431> ? HeadersTooLarge
  : C extends CodesOf<429> ? TooManyRequests
  : C extends CodesOf<500> ? InternalError
  : C extends CodesOf<503> ? ServiceUnavailable
  : never

/**
 * What a domain error gives the edge: its SPEC code and a message for the client (never internals or
 * secrets). Errors the client should retry later also say when (429, 503).
 */
export interface DomainError {
  readonly errorCode: ErrorCode
  readonly message: string
  readonly retryAfterSeconds?: number | undefined
}

/** The wire error of a code and message (`retryAfter`, in seconds, for 429 and 503; default 1). */
export const wireError = <C extends ErrorCode>(errorCode: C, message: string, retryAfter = 1): WireFor<C> => {
  const body = { success: false as const, error: message, errorCode: errorCode as never }
  switch (statusOf(errorCode)) {
    case 400:
      return new BadRequest(body) as WireFor<C>
    case 401:
      return new Unauthorized(body) as WireFor<C>
    case 403:
      return new Forbidden(body) as WireFor<C>
    case 404:
      return new NotFound(body) as WireFor<C>
    case 405:
      return new MethodNotAllowed(body) as WireFor<C>
    case 409:
      return new Conflict(body) as WireFor<C>
    case 410:
      return new Gone(body) as WireFor<C>
    case 413:
      return new PayloadTooLarge(body) as WireFor<C>
    case 415:
      return new UnsupportedMediaType(body) as WireFor<C>
    case 422:
      return new Unprocessable(body) as WireFor<C>
    case 431:
      return new HeadersTooLarge(body) as WireFor<C>
    case 429:
      return new TooManyRequests({ ...body, retryAfter }) as WireFor<C>
    case 500:
      return new InternalError(body) as WireFor<C>
    case 503:
      return new ServiceUnavailable({ ...body, retryAfter }) as WireFor<C>
  }
}

/** The one mapping from a domain error to the wire (used at the edge: handlers and the gateway). */
export const toWire = <E extends DomainError>(e: E): WireFor<E["errorCode"]> =>
  wireError(e.errorCode, e.message, e.retryAfterSeconds) as WireFor<E["errorCode"]>
