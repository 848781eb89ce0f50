/**
 * The typed client: `AnchordClient.make({ baseUrl, apiKey })` gives one method per endpoint, built
 * from the API definition alone (it imports no server code).
 *
 *   const client = yield* makeClient({ baseUrl: "http://127.0.0.1:8080", apiKey })
 *   const { data } = yield* client.records.anchor({ payload: { data: { hello: "world" } }, headers: {} })
 */
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { ApiKeyAuth, KeyOrAddress } from "./auth.ts"
import { Api } from "./Api.ts"

export const bearerLayer = (apiKey: string) =>
  Layer.merge(
    HttpApiMiddleware.layerClient(ApiKeyAuth, ({ next, request }) => next(HttpClientRequest.bearerToken(request, apiKey))),
    HttpApiMiddleware.layerClient(KeyOrAddress, ({ next, request }) => next(HttpClientRequest.bearerToken(request, apiKey)))
  )

export const makeClient = (options: { readonly baseUrl: string; readonly apiKey: string }) =>
  HttpApiClient.make(Api, { baseUrl: options.baseUrl }).pipe(
    Effect.provide(Layer.merge(bearerLayer(options.apiKey), FetchHttpClient.layer))
  )
