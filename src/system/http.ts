import { Effect, SubscriptionRef } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder, OpenApi } from "effect/http-api"
import { DatabaseGuard } from "../db/guard.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { VERSION } from "../version.ts"
import { Api } from "../api/Api.ts"

/** GET /v1/health (liveness plus the database and every configured network as this node sees it) and GET /v1/openapi.json. */
export const SystemHttpLayer = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const guard = yield* DatabaseGuard
    const health = yield* NetworkHealth
    const networks = Effect.map(health.snapshot, (states) => states.map((s) => ({
      networkId: s.networkId,
      chainType: s.chainType,
      // leader: this node batches, sends and watches; follower: another node holds the network's lock
      status: !s.leader ? "follower" : s.rpc === "down" ? "unreachable" : s.rpc === "up" ? "up" : "starting"
    })))
    // Generated once from the definition (the document does not change while the node runs).
    const openapi = JSON.stringify(OpenApi.fromApi(Api))
    return handlers.handle("openapi", () => Effect.succeed(HttpServerResponse.text(openapi, { contentType: "application/json" })))
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
