/** The HTTP server: the API handlers behind the gateway, on a real socket. */
import * as Http from "node:http"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { NodeHttpServer } from "@effect/platform-node"
import { AddressLimitLayer, ApiKeyAuthLayer } from "../auth/middleware.ts"
import { DatabaseBoundLayer } from "../db/guard.ts"
import { BodyBudgetService } from "../http/body.ts"
import { ErrorEnvelopeLayer, JsonBodyFramingLayer } from "../http/middleware.ts"
import { AppConfig } from "../config.ts"
import { RecordsHttpLayer } from "../records/http.ts"
import { VerifyHttpLayer } from "../verify/http.ts"
import { WebhooksHttpLayer } from "../webhooks/http.ts"
import { Api } from "../api/Api.ts"
import { GatewayLayer } from "./gateway.ts"
import { SystemHttpLayer } from "../system/http.ts"

/** Routes + middleware, without a server (tests may serve it on their own socket). */
export const HttpAppLayer = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([RecordsHttpLayer, SystemHttpLayer, WebhooksHttpLayer, VerifyHttpLayer]),
  Layer.provide([ApiKeyAuthLayer, AddressLimitLayer, JsonBodyFramingLayer, ErrorEnvelopeLayer, DatabaseBoundLayer]),
  Layer.provideMerge(GatewayLayer),
  Layer.provide(BodyBudgetService.layer)
)

/** Serves the API on HOST:PORT (PORT 0 picks a free port; HttpServer.address tells which). */
export const HttpServerLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  return HttpRouter.serve(HttpAppLayer, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(() => {
        // Bounded waits on clients too: a connection that does not send its headers, or its request,
        // in time is closed; beyond HTTP_MAX_CONNECTIONS new connections are refused (memory stays bounded).
        const server = Http.createServer({
          keepAliveTimeout: 65_000,
          headersTimeout: config.httpHeadersTimeoutMillis,
          requestTimeout: config.httpRequestTimeoutMillis
        })
        server.maxConnections = config.httpMaxConnections
        return server
      }, { port: config.port, host: config.host })
    )
  )
}))
