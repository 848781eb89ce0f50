/**
 * Cross-cutting parts of the contract, declared as middleware so the OpenAPI document and the typed
 * client know their responses. Implementations: src/http/middleware.ts.
 */
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, InternalError, PayloadTooLarge, ServiceUnavailableSchema, UnsupportedMediaType } from "./errors.ts"

/**
 * Endpoints with a JSON body: 415 unless `Content-Type: application/json`, 413 past the size limit,
 * 400 INVALID_JSON for a body that is empty or not UTF-8, 503 while the node receives too much at once.
 * The JSON itself is parsed by the payload schema (src/api/jsonBody.ts).
 */
export class JsonBodyFraming extends HttpApiMiddleware.Service<JsonBodyFraming>()("anchord/http/JsonBodyFraming", {
  error: [BadRequest, PayloadTooLarge, UnsupportedMediaType, ServiceUnavailableSchema]
}) {}

/**
 * Every endpoint: a request that does not match the endpoint's schemas is 400 VALIDATION_ERROR (or
 * INVALID_JSON) naming the field; the database unavailable is 503; anything unexpected is 500 without
 * internals.
 */
export class ErrorEnvelope extends HttpApiMiddleware.Service<ErrorEnvelope>()("anchord/http/ErrorEnvelope", {
  error: [BadRequest, InternalError, ServiceUnavailableSchema]
}) {}

/**
 * Endpoints that wait on the database: 503 at once while it is known to be down (the circuit breaker),
 * and 503 when it does not answer within the request deadline (REQUEST_DEADLINE_MS; an endpoint that
 * also waits on other services may carry a longer `RequestDeadline`). On endpoints with a body it sits
 * inside JsonBodyFraming (declared on the endpoint before it): a slow upload is not a slow database.
 */
export class DatabaseBound extends HttpApiMiddleware.Service<DatabaseBound>()("anchord/http/DatabaseBound", {
  error: ServiceUnavailableSchema
}) {}

/** An endpoint's own bound on the whole request, in milliseconds (annotation), instead of the default. */
export const RequestDeadline = Context.Reference<number | undefined>("anchord/http/RequestDeadline", { defaultValue: () => undefined })
