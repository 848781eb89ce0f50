/**
 * JSON body framing (SPEC 3, 3.3): 415 unless `Content-Type: application/json`, 413 past the limit (by
 * Content-Length, or as a chunked body passes it), 400 INVALID_JSON for a body that is empty or not
 * UTF-8. Invalid UTF-8 is refused, never replaced: a replaced character would change the hash. 503 when the
 * bytes being received across all requests would pass HTTP_MAX_BODY_BYTES_IN_FLIGHT.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { BadRequest, errorBody, PayloadTooLarge, ServiceUnavailable, UnsupportedMediaType } from "../api/errors.ts"
import { type BodyBudget, readBody, unlimitedBodyBudget } from "./body.ts"

const utf8 = new TextDecoder("utf-8", { fatal: true })

export type FramingError = BadRequest | PayloadTooLarge | UnsupportedMediaType | ServiceUnavailable

const tooLarge = (maxBytes: number) => new PayloadTooLarge(errorBody("PAYLOAD_TOO_LARGE", `Request body is larger than ${maxBytes} bytes`))

/** The request's body as text, when it is a JSON body within the limit. */
export const readJsonText = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number,
  budget: BodyBudget = unlimitedBodyBudget
): Effect.Effect<string, FramingError> => {
  const contentType = (request.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase()
  if (contentType !== "application/json") {
    return Effect.fail(new UnsupportedMediaType(errorBody("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json")))
  }
  if (Number(request.headers["content-length"] ?? "0") > maxBytes) return Effect.fail(tooLarge(maxBytes))
  return Effect.flatMap(readBody(request, maxBytes, budget), (read): Effect.Effect<string, FramingError> => {
    if (read._tag === "TooLarge") return Effect.fail(tooLarge(maxBytes))
    if (read._tag === "Overloaded") {
      return Effect.fail(
        new ServiceUnavailable({ ...errorBody("SERVICE_UNAVAILABLE", "The node is receiving too much at once; retry shortly"), retryAfter: 1 })
      )
    }
    if (read._tag === "Aborted") return Effect.fail(new BadRequest(errorBody("INVALID_JSON", "The request body was not received in full")))
    let text: string
    try {
      text = utf8.decode(read.bytes)
    } catch {
      return Effect.fail(new BadRequest(errorBody("INVALID_JSON", "Request body is not valid UTF-8")))
    }
    if (text.trim() === "") return Effect.fail(new BadRequest(errorBody("INVALID_JSON", "Request body is empty: send a JSON object")))
    return Effect.succeed(text)
  })
}

/**
 * The request with its body read: `text` answers the text read here (the body stream has been
 * consumed), everything else is the request itself. This is how the framed body reaches the
 * endpoint's payload decoding.
 */
export const withText = (request: HttpServerRequest.HttpServerRequest, text: string): HttpServerRequest.HttpServerRequest =>
  Object.create(request, { text: { value: Effect.succeed(text) } })
