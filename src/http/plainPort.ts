/**
 * TLS_PLAIN_PORT (docs/tls.md): beside an HTTPS node, a plain-HTTP listener that serves nothing. GET
 * and HEAD are redirected (308, method kept) to the same path on the node's HTTPS address; any other
 * method gets 426 Upgrade Required with the error body, since a client that sent a body in clear
 * must not be told to resend it elsewhere silently. The redirect's base is PUBLIC_URL, else the HTTPS
 * listener (https://HOST:PORT): never the request's Host header, which the client chooses.
 */
import * as Http from "node:http"
import { Effect, Option } from "effect"
import type { AppConfigShape } from "../config.ts"
import { listenerUrl } from "./publicUrl.ts"

/** Where a request to the plain port is sent: `base` plus the request's path and query (origin-form only). */
export const redirectTarget = (base: string, requestUrl: string | undefined): string => {
  const url = requestUrl ?? "/"
  // An absolute-form or asterisk target (`GET http://elsewhere/x`): the host is never taken from the request.
  return `${base}${url.startsWith("/") ? url : "/"}`
}

const HTTPS_REQUIRED = JSON.stringify({
  success: false,
  error: "This port only redirects to HTTPS: send the request over HTTPS (the body was not read)",
  errorCode: "HTTPS_REQUIRED"
})

/** The plain port's listener on HOST:TLS_PLAIN_PORT, for as long as the scope lasts. */
export const plainPortListener = Effect.fn("Tls.plainPortListener")(function*(
  config: Pick<AppConfigShape, "host" | "baseUrl" | "tlsPlainPort" | "httpMaxConnections" | "httpHeadersTimeoutMillis" | "httpRequestTimeoutMillis">,
  httpsPort: number
) {
  const port = Option.getOrThrow(config.tlsPlainPort)
  const base = Option.getOrElse(config.baseUrl, () => listenerUrl(config.host, httpsPort, true)).replace(/\/+$/, "")
  const server = Http.createServer({
    keepAliveTimeout: 5_000,
    headersTimeout: config.httpHeadersTimeoutMillis,
    requestTimeout: config.httpRequestTimeoutMillis,
    connectionsCheckingInterval: 1_000
  }, (request, response) => {
    if (request.method === "GET" || request.method === "HEAD") {
      response.writeHead(308, { location: redirectTarget(base, request.url), "content-length": "0", "cache-control": "no-store" })
      return response.end()
    }
    // The body is never read: the connection closes after the answer.
    response.writeHead(426, {
      upgrade: "TLS/1.2, HTTP/1.1",
      connection: "Upgrade, close",
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(HTTPS_REQUIRED)),
      "cache-control": "no-store"
    })
    response.end(HTTPS_REQUIRED)
  })
  server.maxConnections = config.httpMaxConnections
  yield* Effect.acquireRelease(
    Effect.callback<void, Error>((resume) => {
      const onError = (error: Error) => resume(Effect.fail(error))
      server.once("error", onError)
      server.listen(port, config.host, () => {
        server.off("error", onError)
        resume(Effect.void)
      })
    }).pipe(
      Effect.mapError((error) =>
        new Error(`TLS_PLAIN_PORT ${port}: cannot listen on ${config.host}: ${(error as NodeJS.ErrnoException).code ?? error.message}`)
      ),
      Effect.orDie
    ),
    () =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
  yield* Effect.logInfo("anchord plain port listening (redirects to HTTPS)", { port: (server.address() as { port: number }).port, redirectsTo: base })
  return server
})
