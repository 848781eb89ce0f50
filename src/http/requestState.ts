/**
 * Per-request facts the gateway establishes before the API handlers run: the strictly parsed JSON
 * body and the authenticated principal. Keyed by the underlying Node request object.
 */
import type { HttpServerRequest } from "effect/http"
import type { Principal } from "../auth/Accounts.ts"

interface RequestState {
  body?: unknown
  bodyText?: string
  principal?: Principal
}

const states = new WeakMap<object, RequestState>()

export const stateOf = (request: HttpServerRequest.HttpServerRequest): RequestState => {
  let state = states.get(request.source)
  if (state === undefined) {
    state = {}
    states.set(request.source, state)
  }
  return state
}
