/**
 * The ApiKeyAuth middleware of the API definition. The gateway (src/http/gateway.ts) has already
 * authenticated the key and applied the limits; this hands the principal to the handlers.
 */
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { errorBody, Unauthorized } from "../api/errors.ts"
import { stateOf } from "../http/requestState.ts"
import { ApiKeyAuth, CurrentPrincipal } from "../api/auth.ts"

export const ApiKeyAuthLayer = Layer.succeed(
  ApiKeyAuth,
  ApiKeyAuth.of({
    bearer: (httpEffect) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const principal = stateOf(request).principal
        if (principal === undefined) {
          return yield* Effect.fail(new Unauthorized(errorBody("MISSING_API_KEY", "Missing API key")))
        }
        return yield* Effect.provideService(httpEffect, CurrentPrincipal, principal)
      })
  })
)
