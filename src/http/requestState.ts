/**
 * Per-request facts the gateway establishes before the API handlers run: the strictly parsed JSON
 * body and the authenticated principal. Kept on the underlying request object.
 */
import type { HttpServerRequest } from "effect/http"
import type { Principal } from "../api/auth.ts"

interface RequestState {
  body?: unknown
  bodyText?: string
  principal?: Principal
}

/** Kept on the underlying request object itself: cheaper than a WeakMap entry per request. */
const STATE = Symbol.for("anchord/requestState")

export const stateOf = (request: HttpServerRequest.HttpServerRequest): RequestState => {
  const source = request.source as { [STATE]?: RequestState }
  let state = source[STATE]
  if (state === undefined) {
    state = {}
    source[STATE] = state
  }
  return state
}
