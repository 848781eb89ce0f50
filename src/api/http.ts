/**
 * Cross-cutting parts of the contract, declared as middleware so the OpenAPI document and the typed
 * client know their responses. Implementations: src/http/middleware.ts.
 */
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, InternalError, PayloadTooLarge, ServiceUnavailableSchema, UnsupportedMediaType } from "./errors.ts"

/**
 * Endpoints with a JSON body: 415 unless `Content-Type: application/json`, 413 past the size limit,
 * 400 INVALID_JSON for a body that is empty or not UTF-8. The JSON itself is parsed by the payload
 * schema (src/api/jsonBody.ts).
 */
export class JsonBodyFraming extends HttpApiMiddleware.Service<JsonBodyFraming>()("anchord/http/JsonBodyFraming", {
  error: [BadRequest, PayloadTooLarge, UnsupportedMediaType]
}) {}

/**
 * Every endpoint: a request that does not match the endpoint's schemas is 400 VALIDATION_ERROR (or
 * INVALID_JSON) naming the field; the database unavailable is 503; anything unexpected is 500 without
 * internals.
 */
export class ErrorEnvelope extends HttpApiMiddleware.Service<ErrorEnvelope>()("anchord/http/ErrorEnvelope", {
  error: [BadRequest, InternalError, ServiceUnavailableSchema]
}) {}
