/** The HTTP server: the API handlers behind the gateway, on a real socket. */
import * as Http from "node:http"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { NodeHttpServer } from "@effect/platform-node"
import { AddressLimitLayer, ApiKeyAuthLayer, KeyOrAddressLayer } from "../auth/middleware.ts"
import { CertificatesHttpLayer } from "../certificates/http.ts"
import { ConsoleAuthHttpLayer, ConsoleHttpLayer } from "../console/http.ts"
import { ConsoleSameOriginLayer, ConsoleSessionLayer } from "../console/middleware.ts"
import { PagesLayer } from "../console/pages.ts"
import { ErrorEnvelopeLayer, JsonBodyFramingLayer } from "../http/middleware.ts"
import { AppConfig } from "../config.ts"
import { RecordsHttpLayer } from "../records/http.ts"
import { VerifyHttpLayer } from "../verify/http.ts"
import { WebhooksHttpLayer } from "../webhooks/http.ts"
import { Api } from "../api/Api.ts"
import { GatewayLayer } from "./gateway.ts"
import { SystemHttpLayer } from "../system/http.ts"

/**
 * Routes + middleware, without a server (tests may serve it on their own socket): the API (HttpApi,
 * the console's API included) and the node's pages (/console, /verify: src/console/pages.ts).
 */
export const HttpAppLayer = Layer.merge(
  HttpApiBuilder.layer(Api).pipe(
    Layer.provide([
      RecordsHttpLayer, SystemHttpLayer, WebhooksHttpLayer, VerifyHttpLayer, CertificatesHttpLayer, ConsoleAuthHttpLayer, ConsoleHttpLayer
    ]),
    Layer.provide([
      ApiKeyAuthLayer, AddressLimitLayer, KeyOrAddressLayer, JsonBodyFramingLayer, ErrorEnvelopeLayer, ConsoleSessionLayer, ConsoleSameOriginLayer
    ])
  ),
  PagesLayer
).pipe(Layer.provideMerge(GatewayLayer))

/** Serves the API on HOST:PORT (PORT 0 picks a free port; HttpServer.address tells which). */
export const HttpServerLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  return HttpRouter.serve(HttpAppLayer, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(() => Http.createServer({ keepAliveTimeout: 65_000 }), { port: config.port, host: config.host })
    )
  )
}))
