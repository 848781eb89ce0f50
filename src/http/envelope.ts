/** Wire errors as responses, for the places that answer outside an endpoint (the gateway). */
import { HttpServerResponse } from "effect/http"
import { errorBody, type ErrorCode, statusOf, type WireError } from "../api/errors.ts"

/** The error body with its status (and Retry-After for 429 and 503), plus `headers`. */
export const wireResponse = (error: WireError, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.jsonUnsafe(errorBody(error.errorCode, error.error), {
    status: statusOf(error.errorCode),
    headers: "retryAfter" in error ? { ...headers, "retry-after": String(error.retryAfter) } : headers
  })

/** An error response from a code and message. */
export const errorResponse = (errorCode: ErrorCode, message: string, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.jsonUnsafe(errorBody(errorCode, message), { status: statusOf(errorCode), headers })
