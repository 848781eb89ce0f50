/** The HTTP server: the API handlers behind the gateway, on a real socket. */
import * as Http from "node:http"
import * as Https from "node:https"
import type * as Net from "node:net"
import { Cause, Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServer, type HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { NodeHttpServer } from "@effect/platform-node"
import { AddressLimitLayer, ApiKeyAuthLayer, KeyOrAddressLayer } from "../auth/middleware.ts"
import { DatabaseBoundLayer } from "../db/guard.ts"
import { BodyBudgetService } from "../http/body.ts"
import { CertificatesHttpLayer } from "../certificates/http.ts"
import { ConsoleHttpLayer } from "../console/http.ts"
import { ConsoleSameOriginLayer, ConsoleSessionLayer } from "../console/middleware.ts"
import { PagesLayer } from "../console/pages.ts"
import { LogHttpLayer } from "../translog/http.ts"
import { LogStore } from "../translog/LogStore.ts"
import { ErrorEnvelopeLayer, JsonBodyFramingLayer } from "../http/middleware.ts"
import { AppConfig } from "../config.ts"
import type { ErrorCode } from "../api/errors.ts"
import { Admission } from "../auth/Admission.ts"
import { ALLOWED_METHODS } from "../http/edge.ts"
import { breakBody } from "../http/body.ts"
import { answerAndClose, answerResponse, describeClientError, rawErrorResponse } from "../http/malformed.ts"
import { ReceiptKeysHttpLayer, ReceiptsHttpLayer } from "../receipts/http.ts"
import { LogProofsHttpLayer } from "../translog/proofHttp.ts"
import { RecordsHttpLayer } from "../records/http.ts"
import { VerifyHttpLayer } from "../verify/http.ts"
import { WebhooksHttpLayer } from "../webhooks/http.ts"
import { Api } from "../api/Api.ts"
import { GatewayLayer } from "./gateway.ts"
import { SystemHttpLayer } from "../system/http.ts"
import { TimestampHttpLayer, TsaShortHttpLayer } from "../tsa/http.ts"
import { HSTS, httpsServerOptions, loadTlsPair, watchTlsPair } from "../http/tls.ts"
import { metricsHandle, setTlsCertificateExpiry } from "../metrics/metrics.ts"
import { plainPortListener } from "../http/plainPort.ts"

/**
 * Routes + middleware, without a server (tests may serve it on their own socket): the API (HttpApi,
 * the console's API included), the node's pages (/console, /verify: src/console/pages.ts) and the
 * transparency logs' tiles (/log).
 */
export const HttpAppLayer = Layer.mergeAll(
  HttpApiBuilder.layer(Api).pipe(
    Layer.provide([
      RecordsHttpLayer,
      SystemHttpLayer,
      WebhooksHttpLayer,
      VerifyHttpLayer,
      CertificatesHttpLayer,
      ConsoleHttpLayer,
      TimestampHttpLayer,
      TsaShortHttpLayer,
      ReceiptsHttpLayer,
      LogProofsHttpLayer.pipe(Layer.provide(LogStore.layer)),
      ReceiptKeysHttpLayer
    ]),
    Layer.provide([
      ApiKeyAuthLayer,
      AddressLimitLayer,
      KeyOrAddressLayer,
      JsonBodyFramingLayer,
      ErrorEnvelopeLayer,
      ConsoleSessionLayer,
      ConsoleSameOriginLayer,
      DatabaseBoundLayer
    ])
  ),
  PagesLayer,
  // The transparency logs as C2SP tlog-tiles under /log/<networkId> (src/translog/http.ts).
  LogHttpLayer.pipe(Layer.provide(LogStore.layer))
).pipe(Layer.provideMerge(GatewayLayer), Layer.provide(BodyBudgetService.layer))

/**
 * What node:http answers by itself unless told otherwise (a parse error, an unknown `Expect`,
 * `CONNECT`): the error body with the X-RateLimit-* headers, counted by client address like any
 * request without a key (src/http/malformed.ts).
 */
const answerMalformed = (server: Http.Server, admission: typeof Admission.Service) => {
  /** The rate-limit headers of one more request from this address, then `answer` (a 429 past the limit). */
  const counted = (
    socket: Net.Socket,
    headers: Http.IncomingHttpHeaders,
    answer: (code: ErrorCode, message: string, headers: Readonly<Record<string, string>>) => void,
    code: ErrorCode,
    message: string
  ) => {
    const request = { headers, remoteAddress: Option.fromNullishOr(socket.remoteAddress) } as unknown as HttpServerRequest.HttpServerRequest
    Effect.runCallback(Effect.exit(admission.byAddress(request)), {
      onExit: (exit) => {
        if (exit._tag === "Success" && exit.value._tag === "Success") return answer(code, message, exit.value.value.headers)
        if (exit._tag === "Success" && exit.value._tag === "Failure") {
          const refused = Cause.findErrorOption(exit.value.cause)
          if (Option.isSome(refused)) {
            return answer("RATE_LIMIT_EXCEEDED", refused.value.error.error, { ...refused.value.headers, "retry-after": String(refused.value.error.retryAfter) })
          }
        }
        answer(code, message, {})
      }
    })
  }
  server.on("clientError", (error: Error & { code?: string }, socket: Net.Socket) => {
    if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
    // A parse error in the body of a request being handled (a broken chunk): the handler owns the
    // response. A body read in progress is told, and answers 400 "not received in full" (with
    // Connection: close, the request being incomplete); otherwise the handler answers as it would.
    const inFlight = (socket as { _httpMessage?: Http.ServerResponse | null })._httpMessage
    if (inFlight != null) {
      if (inFlight.headersSent) return socket.destroy()
      return breakBody(inFlight.req, error)
    }
    const { code, message } = describeClientError(error)
    counted(socket, {}, (c, m, h) => answerAndClose(socket, rawErrorResponse(c, m, h)), code, message)
  })
  server.on("checkExpectation", (request: Http.IncomingMessage, response: Http.ServerResponse) => {
    counted(request.socket, request.headers, (c, m, h) => answerResponse(response, c, m, h), "VALIDATION_ERROR",
      "Unsupported Expect header: only 100-continue is understood")
  })
  server.on("connect", (request: Http.IncomingMessage, socket: Net.Socket) => {
    counted(socket, request.headers, (c, m, h) => answerAndClose(socket, rawErrorResponse(c, m, { ...h, allow: ALLOWED_METHODS })), "METHOD_NOT_ALLOWED",
      "Method CONNECT is not allowed")
  })
}

/**
 * Serves the API on HOST:PORT (PORT 0 picks a free port; HttpServer.address tells which): over HTTPS
 * when TLS_CERT_FILE / TLS_KEY_FILE are set (docs/tls.md; the pair is checked first, and a bad one
 * stops the start), with the pair reloaded on SIGHUP and on file changes, and TLS_PLAIN_PORT's
 * redirecting listener beside it.
 */
export const HttpServerLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  const admission = yield* Admission
  const tls = Option.getOrUndefined(config.tls)
  const pair = tls === undefined ? undefined : loadTlsPair(tls, new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis)))
  if (typeof pair === "string") return yield* Effect.die(new Error(`HTTPS: ${pair}`))
  let server: Http.Server | undefined
  const make = () => {
    // Bounded waits on clients too: a connection that does not send its headers, or its request,
    // in time is closed; beyond HTTP_MAX_CONNECTIONS new connections are refused (memory stays bounded).
    const options: Http.ServerOptions = {
      keepAliveTimeout: 65_000,
      headersTimeout: config.httpHeadersTimeoutMillis,
      requestTimeout: config.httpRequestTimeoutMillis,
      // How often those two are checked (Node's default, 30 s, would let a slow client stay that much longer).
      connectionsCheckingInterval: 1_000,
      // node:http would answer an HTTP/1.1 request without Host with a bare 400 (no body, no rate-limit
      // headers): the gateway answers it like every other malformed request (src/app/gateway.ts).
      requireHostHeader: false
    }
    // node:https is node:http over TLS: the same parser, limits and events (answerMalformed) either way.
    server = pair === undefined ? Http.createServer(options) : Https.createServer({ ...options, ...httpsServerOptions(pair) })
    server.maxConnections = config.httpMaxConnections
    // HTTPS tells browsers to stay on it (before the app's own listener writes the answer's head).
    if (pair !== undefined) server.prependListener("request", (_request, response) => response.setHeader("strict-transport-security", HSTS))
    answerMalformed(server, admission)
    return server
  }
  const served = HttpRouter.serve(HttpAppLayer, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(make, { port: config.port, host: config.host }))
  )
  if (tls === undefined || pair === undefined) return served
  const extras = Layer.effectDiscard(Effect.gen(function*() {
    const ctx = yield* metricsHandle
    yield* watchTlsPair(server as Https.Server, tls, pair, config.tlsWatchIntervalMillis, (p) => setTlsCertificateExpiry(ctx, p.notAfter))
    if (Option.isSome(config.tlsPlainPort)) {
      const address = (yield* HttpServer.HttpServer).address
      yield* plainPortListener(config, address._tag === "UnixPathAddress" ? config.port : address.port)
    }
  }))
  return extras.pipe(Layer.provideMerge(served))
}))
