import * as Crypto from "node:crypto"
import { Effect, SubscriptionRef } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, OpenApi } from "effect/http-api"
import { DatabaseGuard } from "../db/guard.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { VERSION } from "../version.ts"
import { Api } from "../api/Api.ts"
import type { NetworkState } from "../api/recordSchemas.ts"
import { AppConfig } from "../config.ts"
import { publicBaseUrl } from "../http/publicUrl.ts"

/** If-None-Match (a list of entity tags, weak ones compared weakly, or *) against our tag. */
const matches = (header: string | undefined, etag: string) =>
  header !== undefined && header.split(",").some((tag) => {
    const t = tag.trim()
    return t === "*" || t === etag || t === `W/${etag}`
  })

/** GET /v1/health (liveness plus the database and every configured network as this node sees it) and GET /v1/openapi.json. */
export const SystemHttpLayer = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const guard = yield* DatabaseGuard
    const health = yield* NetworkHealth
    const networks = Effect.map(health.snapshot, (states) =>
      states.map((s) => ({
        networkId: s.networkId,
        chainType: s.chainType,
        // leader: this node batches, sends and watches; follower: another node holds the network's lock
        status: (!s.leader ? "follower" : s.rpc === "down" ? "unreachable" : s.rpc === "up" ? "up" : "starting") as typeof NetworkState.Type
      })))
    const config = yield* AppConfig
    const spec = OpenApi.fromApi(Api)
    // Generated once per base URL (the document does not change while the node runs), so its ETag is
    // the hash of its text: a client that has it revalidates with If-None-Match and gets a 304. Its
    // `servers`: this node, relative, and its public base (PUBLIC_URL, else the listener, https:// when
    // the node serves TLS), never the request's Host header. One base per node: the map stays at one entry.
    const documents = new Map<string, { readonly text: string; readonly etag: string }>()
    const documentFor = (base: string) => {
      let document = documents.get(base)
      if (document === undefined) {
        const text = JSON.stringify({ ...spec, servers: [{ url: "/", description: "This node" }, { url: base, description: "This node's public URL" }] })
        document = { text, etag: `"${Crypto.hash("sha256", text, "base64url").slice(0, 27)}"` }
        documents.set(base, document)
      }
      return document
    }
    return handlers.handle("openapi", ({ headers }) =>
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        const { text, etag } = documentFor(publicBaseUrl(request, config))
        const cached = { etag, "cache-control": "no-cache" }
        return matches(headers["if-none-match"], etag)
          ? HttpServerResponse.empty({ status: 304, headers: cached })
          : HttpServerResponse.text(text, { contentType: "application/json", headers: cached })
      }))
      .handle("health", () =>
        // From cached state only (the database probe of DatabaseGuard, the pipelines' NetworkHealth): it
        // answers at once whatever the database or a chain does.
        Effect.gen(function*() {
          const db = yield* SubscriptionRef.get(guard.state)
          const database = { status: db.status, latencyMs: db.status === "up" ? db.latencyMs : null }
          return {
            success: true as const,
            data: {
              status: database.status === "up" ? "ok" as const : "degraded" as const,
              version: VERSION,
              database,
              networks: yield* networks
            }
          }
        }))
  }))
