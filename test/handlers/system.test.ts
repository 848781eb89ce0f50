/**
 * The system API (health, the OpenAPI document) over the in-memory services: no key, counted by
 * address. Over a real node: test/http/, test/openapi/.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { VERSION } from "../../src/version.ts"
import { MemoryDatabase } from "../support/memory/database.ts"
import { read, request, send, withApi } from "../support/memory/api.ts"

describe("system API (in memory)", () => {
  it.effect("GET /v1/health: ok while the database is up, degraded while it is down; counted by address", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const up = yield* client.system.health({ responseMode: "response-only" }).pipe(Effect.flatMap(read), Effect.orDie)
        assert.strictEqual(up.status, 200)
        assert.deepStrictEqual(up.body, { success: true, data: { status: "ok", version: VERSION, database: { status: "up", latencyMs: 1 }, networks: [] } })
        assert.strictEqual(up.headers["x-ratelimit-limit"], "10")
        assert.strictEqual(up.headers["x-ratelimit-remaining"], "9")

        yield* (yield* MemoryDatabase).setUp(false)
        const down = yield* client.system.health()
        assert.deepStrictEqual(down.data.status, "degraded")
        assert.deepStrictEqual(down.data.database, { status: "down", latencyMs: null })
      })
    ))

  it.effect("GET /v1/openapi.json: the document with its ETag; If-None-Match with it is 304", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const document = yield* read(yield* send(client, request("GET", "/v1/openapi.json")))
        assert.strictEqual(document.status, 200)
        assert.strictEqual(document.body.info.version, VERSION)
        assert.strictEqual(document.headers["cache-control"], "no-cache")
        const etag = document.headers["etag"]!
        assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/)
        const cached = yield* send(client, request("GET", "/v1/openapi.json", { headers: { "if-none-match": `W/${etag}` } }))
        assert.strictEqual(cached.status, 304)
        assert.strictEqual(cached.headers["etag"], etag)
      })
    ))
})
