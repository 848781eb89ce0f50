/**
 * Second reference for `npm run bench:ingest`: the baseline's work (JSON.parse, RFC 8785
 * canonicalization, SHA-256, the same 202 body) served through the HTTP stack the node is built on
 * (Effect's NodeHttpServer and HttpRouter) instead of bare node:http. What it loses against the
 * baseline is the stack's own cost, which no handler written on it can win back; what the node loses
 * against it is the node's own work (keys, limits, validation, the durable commit).
 */
import * as Http from "node:http"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { recordHash } from "../../src/canonical/jcs.ts"

const port = Number(process.argv[2] ?? 8091)

const Anchor = HttpRouter.add("POST", "/", Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = JSON.parse(yield* request.text)
  return HttpServerResponse.jsonUnsafe({ success: true, data: { hash: recordHash(body.data), status: "QUEUED" } }, { status: 202 })
}).pipe(Effect.catchCause(() =>
  Effect.succeed(HttpServerResponse.jsonUnsafe(
    { success: false, error: "bad", errorCode: "INVALID_JSON" },
    { status: 400 }
  ))
)))
const Ready = HttpRouter.add("GET", "/", Effect.succeed(HttpServerResponse.text("ok")))

NodeRuntime.runMain(Layer.launch(
  HttpRouter.serve(Layer.mergeAll(Anchor, Ready), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(NodeHttpServer.layer(() => Http.createServer({ keepAliveTimeout: 65_000 }), { port, host: "127.0.0.1" }))
  )
))
