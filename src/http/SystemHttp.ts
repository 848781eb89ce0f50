import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { VERSION } from "../version.ts"
import { Api } from "./Api.ts"

/** GET /v1/health: liveness plus the database (and, once configured, every network). */
export const SystemHttpLayer = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("health", () =>
      Effect.gen(function*() {
        const started = Date.now()
        const database = yield* sql`SELECT 1`.pipe(
          Effect.timeout("2 seconds"),
          Effect.map(() => ({ status: "up" as const, latencyMs: Date.now() - started })),
          Effect.catchCause(() => Effect.succeed({ status: "down" as const, latencyMs: null }))
        )
        return {
          success: true as const,
          data: {
            status: database.status === "up" ? "ok" as const : "degraded" as const,
            version: VERSION,
            database,
            networks: []
          }
        }
      }))
  }))
