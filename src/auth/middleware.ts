/**
 * The authentication middleware of the contract (src/api/auth.ts): ApiKeyAuth authenticates the
 * bearer key, counts it against the key's per-second limit and provides the principal to the
 * handlers; AddressLimit counts public requests by client address. Both put the X-RateLimit-* headers
 * (and for a key the X-Quota-* headers) on the response, errors included.
 */
import { Effect, Layer } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AddressLimit, ApiKeyAuth, CurrentCaller, CurrentPrincipal, KeyOrAddress, type Principal } from "../api/auth.ts"
import { Admission, bearerToken, type Headers } from "./Admission.ts"

/** Puts `headers` (and the principal's quota headers, as usage stands when the response leaves) on the response. */
const respondWith = (admission: typeof Admission.Service, headers: Headers, principal: Principal | undefined) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    principal === undefined
      ? Effect.succeed(HttpServerResponse.setHeaders(response, headers))
      : Effect.map(admission.quotaHeaders(principal), (quota) => HttpServerResponse.setHeaders(response, { ...headers, ...quota }))
  )

export const ApiKeyAuthLayer = Layer.effect(
  ApiKeyAuth,
  Effect.map(Admission, (admission) =>
    ApiKeyAuth.of({
      // The credential is read from the request itself: a non-Bearer Authorization is INVALID_API_KEY, not missing.
      bearer: (httpEffect) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.matchEffect(admission.byKey(request), {
            onFailure: (refused) => Effect.andThen(respondWith(admission, refused.headers, refused.principal), Effect.fail(refused.error)),
            onSuccess: (admitted) =>
              Effect.andThen(
                respondWith(admission, admitted.headers, admitted.principal),
                Effect.provideService(httpEffect, CurrentPrincipal, admitted.principal!)
              )
          }))
    }))
)

export const AddressLimitLayer = Layer.effect(
  AddressLimit,
  Effect.map(Admission,
    (admission) =>
      AddressLimit.of((httpEffect) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.matchEffect(admission.byAddress(request), {
            onFailure: (refused) => Effect.andThen(respondWith(admission, refused.headers, undefined), Effect.fail(refused.error)),
            onSuccess: (admitted) => Effect.andThen(respondWith(admission, admitted.headers, undefined), httpEffect)
          }))
      ))
)

/** A key when one is sent (as ApiKeyAuth), else anonymous and counted by address (as AddressLimit). */
export const KeyOrAddressLayer = Layer.effect(
  KeyOrAddress,
  Effect.map(Admission, (admission) =>
    KeyOrAddress.of({
      bearer: (httpEffect) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.matchEffect(bearerToken(request.headers["authorization"]) === undefined ? admission.byAddress(request) : admission.byKey(request), {
            onFailure: (refused) => Effect.andThen(respondWith(admission, refused.headers, refused.principal), Effect.fail(refused.error)),
            onSuccess: (admitted) =>
              Effect.andThen(
                respondWith(admission, admitted.headers, admitted.principal),
                Effect.provideService(httpEffect, CurrentCaller, { principal: admitted.principal })
              )
          }))
    }))
)
