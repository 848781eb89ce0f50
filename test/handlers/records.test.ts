/**
 * The records API's wire contract (docs/api.md, SPEC 3, 7) over the in-memory stores: statuses, bodies
 * and headers of create, get, list, update, delete, proofs and usage, the errors of bad input and the
 * Idempotency-Key rules. No database: the handlers, middleware and services are the node's
 * (test/support/memory/api.ts). The same endpoints over real PostgreSQL: test/records/.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpClientRequest } from "effect/http"
import { TestClock } from "effect/testing"
import { BadRequest, NotFound } from "../../src/api/errors.ts"
import { MemoryDatabase } from "../support/memory/database.ts"
import { asKey, newKey, read, request, send, T0, withApi } from "../support/memory/api.ts"
import { MemoryTables } from "../support/memory/tables.ts"

const anchor = (key: string, body: unknown, headers?: Record<string, string>) => request("POST", "/v1/anchor", { key, body, headers })

describe("records API (in memory)", () => {
  it.effect("POST /v1/anchor: 202 with the queued record, Cache-Control no-store, the rate-limit and quota headers; GET and the list show it", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey({ plan: "STARTUP" })
        const created = yield* read(yield* send(client, anchor(key, { data: { b: 2, a: 1 }, metadata: { z: 1, y: 2 }, collection: "invoices" })))
        assert.strictEqual(created.status, 202)
        assert.strictEqual(created.headers["content-type"], "application/json")
        assert.strictEqual(created.headers["cache-control"], "no-store")
        assert.strictEqual(created.headers["x-ratelimit-limit"], "50")
        assert.strictEqual(created.headers["x-ratelimit-remaining"], "49")
        assert.strictEqual(created.headers["x-quota-limit"], "50000")
        // The quota headers are read as the response leaves: the record just accepted is counted.
        assert.strictEqual(created.headers["x-quota-remaining"], "49999")
        assert.isUndefined(created.headers["idempotent-replayed"])
        const record = created.body.data
        assert.strictEqual(created.body.success, true)
        assert.match(record.recordId, /^[0-9a-f]{24}$/)
        assert.deepInclude(record, {
          status: "QUEUED",
          environment: "test",
          chainType: "evm",
          networkId: "evm-test",
          packageMode: "MANAGED",
          collection: "invoices",
          metadata: { z: 1, y: 2 },
          webhookUrl: null,
          createdAt: new Date(T0).toISOString(),
          anchoredAt: null,
          deletedAt: null,
          encrypted: false,
          anchors: []
        })
        // The data as stored: its canonical (RFC 8785) form.
        assert.strictEqual(JSON.stringify(record.data), `{"a":1,"b":2}`)

        const fetched = yield* client.records.get({ params: { recordId: record.recordId }, query: {}, headers: {} }).pipe(asKey(key))
        assert.deepStrictEqual(fetched.data, record)
        const listed = yield* client.records.list({ query: {} }).pipe(asKey(key))
        assert.deepStrictEqual(listed.data.records.map((r) => r.recordId), [record.recordId])
        assert.isNull(listed.data.nextCursor)
      })
    ))

  it.effect("/v1/anchor/hash and /v1/anchor/encrypted: 202; the key decrypts on GET, another key is 400 INVALID_ENCRYPTION_KEY", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const hash = "AB".repeat(32)
        const byHash = yield* read(yield* send(client, request("POST", "/v1/anchor/hash", { key, body: { hash } })))
        assert.strictEqual(byHash.status, 202)
        assert.deepInclude(byHash.body.data, { hash: hash.toLowerCase(), packageMode: "SEPARATED", data: null })

        const secret = "k".repeat(32)
        const sealed = yield* read(yield* send(client, request("POST", "/v1/anchor/encrypted", { key, body: { data: { secret: 1 }, encryptionKey: secret } })))
        assert.strictEqual(sealed.status, 202)
        assert.deepInclude(sealed.body.data, { encrypted: true, hashScheme: "salted-jcs-sha256" })
        const id = sealed.body.data.recordId
        const opened = yield* read(yield* send(client, request("GET", `/v1/records/${id}`, { key, headers: { "x-encryption-key": secret } })))
        assert.strictEqual(opened.status, 200)
        assert.deepStrictEqual(opened.body.data.data, { secret: 1 })
        const wrong = yield* read(yield* send(client, request("GET", `/v1/records/${id}`, { key, headers: { "x-encryption-key": "x".repeat(32) } })))
        assert.strictEqual(wrong.status, 400)
        assert.deepStrictEqual(wrong.body, {
          success: false,
          error: "X-Encryption-Key does not decrypt this record",
          errorCode: "INVALID_ENCRYPTION_KEY"
        })
      })
    ))

  it.effect("/v1/anchor/batch: 202 when all are accepted, 207 with each refusal and nothing written for it", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const all = yield* read(yield* send(client, request("POST", "/v1/anchor/batch", { key, body: { records: [{ data: { n: 1 } }, { data: { n: 2 } }] } })))
        assert.strictEqual(all.status, 202)
        assert.deepInclude(all.body.data, { accepted: 2, rejected: 0 })

        const some = yield* read(
          yield* send(client, request("POST", "/v1/anchor/batch", { key, body: { records: [{ data: { n: 3 } }, { data: "not an object" }] } }))
        )
        assert.strictEqual(some.status, 207)
        assert.deepInclude(some.body.data, { accepted: 1, rejected: 1, summary: { successful: 1, failed: 1 } })
        assert.strictEqual(some.body.data.results[0].success, true)
        assert.deepInclude(some.body.data.results[1], { index: 1, success: false, errorCode: "VALIDATION_ERROR" })
        assert.match(some.body.data.results[1].error, /^records\[1\]\.data/)

        const none = yield* read(yield* send(client, request("POST", "/v1/anchor/batch", { key, body: { records: [{ data: 1 }] } })))
        assert.strictEqual(none.status, 207)
        assert.deepInclude(none.body.data, { accepted: 0, rejected: 1 })
        const tables = yield* MemoryTables
        assert.strictEqual(tables.records.size, 3)
      })
    ))

  it.effect("GET /v1/records: newest first, cursor pages without gaps or repeats, status and collection filters", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const ids: Array<string> = []
        for (let n = 0; n < 5; n++) {
          const created = yield* read(yield* send(client, anchor(key, { data: { n }, ...(n % 2 === 0 ? { collection: "even" } : {}) })))
          ids.push(created.body.data.recordId)
        }
        const seen: Array<string> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = yield* client.records.list({ query: { limit: 2, ...(cursor === undefined ? {} : { cursor }) } }).pipe(asKey(key))
          seen.push(...page.data.records.map((r) => r.recordId))
          cursor = page.data.nextCursor ?? undefined
          pages++
        } while (cursor !== undefined)
        assert.strictEqual(pages, 3)
        assert.deepStrictEqual(seen, [...ids].reverse())

        const even = yield* client.records.list({ query: { collection: "even" } }).pipe(asKey(key))
        assert.deepStrictEqual(even.data.records.map((r) => r.recordId), [ids[4], ids[2], ids[0]])
        const queued = yield* client.records.list({ query: { status: "QUEUED", limit: 1 } }).pipe(asKey(key))
        assert.deepStrictEqual(queued.data.records.map((r) => r.recordId), [ids[4]])
        assert.isString(queued.data.nextCursor)
        const anchored = yield* client.records.list({ query: { status: "ANCHORED" } }).pipe(asKey(key))
        assert.deepStrictEqual(anchored.data, { records: [], nextCursor: null })

        // Another account's key sees none of them.
        const other = yield* newKey()
        const theirs = yield* client.records.list({ query: {} }).pipe(asKey(other.key))
        assert.deepStrictEqual(theirs.data.records, [])
      })
    ))

  it.effect("GET /v1/records: a cursor this API did not issue, a limit out of range, an unknown status are 400 VALIDATION_ERROR naming them", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const badCursor = yield* read(yield* send(client, request("GET", "/v1/records?cursor=bm90LWEtY3Vyc29y", { key })))
        assert.strictEqual(badCursor.status, 400)
        assert.deepStrictEqual(badCursor.body, { success: false, error: "cursor: not a cursor this API issued", errorCode: "VALIDATION_ERROR" })
        // The typed client sends it the same way.
        const typed = yield* client.records.list({ query: { cursor: "bm90LWEtY3Vyc29y" } }).pipe(asKey(key), Effect.flip)
        assert.instanceOf(typed, BadRequest)

        for (const query of ["limit=0", "limit=101", "limit=ten", "status=LOST", "includeDeleted=yes"]) {
          const refused = yield* read(yield* send(client, request("GET", `/v1/records?${query}`, { key })))
          assert.strictEqual(refused.status, 400, query)
          assert.strictEqual(refused.body.errorCode, "VALIDATION_ERROR", query)
          assert.include(refused.body.error, query.split("=")[0], query)
          assert.strictEqual(refused.headers["x-ratelimit-limit"], "50", query)
        }
      })
    ))

  it.effect("GET /v1/records/{id}: 404 RECORD_NOT_FOUND for an unknown or another account's id, 400 for a malformed one", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const other = yield* newKey()
        const theirs = (yield* read(yield* send(client, anchor(other.key, { data: { a: 1 } })))).body.data.recordId
        for (const id of ["0123456789abcdef01234567", theirs]) {
          const missing = yield* read(yield* send(client, request("GET", `/v1/records/${id}`, { key })))
          assert.strictEqual(missing.status, 404)
          assert.strictEqual(missing.body.errorCode, "RECORD_NOT_FOUND")
          assert.include(missing.body.error, id)
        }
        const typed = yield* client.records.get({ params: { recordId: "0123456789abcdef01234567" }, query: {}, headers: {} }).pipe(asKey(key), Effect.flip)
        assert.instanceOf(typed, NotFound)
        const malformed = yield* read(yield* send(client, request("GET", "/v1/records/not-an-id", { key })))
        assert.strictEqual(malformed.status, 400)
        assert.strictEqual(malformed.body.errorCode, "VALIDATION_ERROR")
      })
    ))

  it.effect("PATCH /v1/records/{id}: metadata in the client's order, 422 IMMUTABLE_FIELD, 400 INVALID_WEBHOOK_URL, one record.updated per change", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const id = (yield* read(yield* send(client, anchor(key, { data: { a: 1 }, metadata: { a: 1 } })))).body.data.recordId
        const patch = (body: unknown) => Effect.flatMap(send(client, request("PATCH", `/v1/records/${id}`, { key, body })), read)

        const changed = yield* patch({ metadata: { z: 1, a: 2 }, webhookUrl: "https://hooks.example.com/r" })
        assert.strictEqual(changed.status, 200)
        assert.deepStrictEqual(Object.keys(changed.body.data.metadata), ["z", "a"])
        assert.strictEqual(changed.body.data.webhookUrl, "https://hooks.example.com/r")
        // The same values again change nothing.
        const same = yield* patch({ metadata: { a: 2, z: 1 } })
        assert.strictEqual(same.status, 200)
        const tables = yield* MemoryTables
        assert.deepStrictEqual(tables.events.map((e) => e.event.kind), ["record.updated"])

        const immutable = yield* patch({ data: { a: 2 }, collection: "x" })
        assert.strictEqual(immutable.status, 422)
        assert.strictEqual(immutable.body.errorCode, "IMMUTABLE_FIELD")
        assert.include(immutable.body.error, "data")
        const privateUrl = yield* patch({ webhookUrl: "https://internal.example.com/hook" })
        assert.strictEqual(privateUrl.status, 400)
        assert.strictEqual(privateUrl.body.errorCode, "INVALID_WEBHOOK_URL")
        const notJson = yield* read(yield* send(client, request("PATCH", `/v1/records/${id}`, { key, body: "{" })))
        assert.strictEqual(notJson.status, 400)
        assert.strictEqual(notJson.body.errorCode, "INVALID_JSON")
        const unknown = yield* read(yield* send(client, request("PATCH", "/v1/records/0123456789abcdef01234567", { key, body: { metadata: {} } })))
        assert.strictEqual(unknown.status, 404)
      })
    ))

  it.effect("DELETE /v1/records/{id}: soft then 410 RECORD_DELETED (shown with includeDeleted=true), hard erases", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const id = (yield* read(yield* send(client, anchor(key, { data: { a: 1 }, metadata: { who: "me" } })))).body.data.recordId
        const soft = yield* read(yield* send(client, request("DELETE", `/v1/records/${id}`, { key })))
        assert.strictEqual(soft.status, 200)
        assert.deepStrictEqual(soft.body.data, { recordId: id, mode: "soft", deletedAt: new Date(T0).toISOString() })
        const gone = yield* read(yield* send(client, request("GET", `/v1/records/${id}`, { key })))
        assert.strictEqual(gone.status, 410)
        assert.strictEqual(gone.body.errorCode, "RECORD_DELETED")
        const again = yield* read(yield* send(client, request("DELETE", `/v1/records/${id}`, { key })))
        assert.strictEqual(again.status, 410)
        const shown = yield* client.records.get({ params: { recordId: id }, query: { includeDeleted: "true" }, headers: {} }).pipe(asKey(key))
        assert.strictEqual(shown.data.status, "DELETED")

        const hard = yield* read(yield* send(client, request("DELETE", `/v1/records/${id}?mode=hard`, { key })))
        assert.strictEqual(hard.status, 200)
        assert.strictEqual(hard.body.data.mode, "hard")
        const erased = yield* read(yield* send(client, request("GET", `/v1/records/${id}?includeDeleted=true`, { key })))
        assert.strictEqual(erased.status, 410)
        const badMode = yield* read(yield* send(client, request("DELETE", `/v1/records/${id}?mode=shred`, { key })))
        assert.strictEqual(badMode.status, 400)
      })
    ))

  it.effect("proofs and usage: a queued record's proof is 409 NOT_ANCHORED, an unknown hash 404, usage counts this month's records", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { accountId, key } = yield* newKey({ plan: "FREE" })
        const created = (yield* read(yield* send(client, anchor(key, { data: { a: 1 } })))).body.data
        const proof = yield* read(yield* send(client, request("GET", `/v1/records/${created.recordId}/proof`, { key })))
        assert.strictEqual(proof.status, 409)
        assert.strictEqual(proof.body.errorCode, "NOT_ANCHORED")

        const byHash = yield* client.records.proofByHash({ params: { hash: created.hash.toUpperCase() } }).pipe(asKey(key))
        assert.deepStrictEqual(byHash.data, {
          hash: created.hash,
          records: [{ recordId: created.recordId, status: "QUEUED", createdAt: created.createdAt, anchors: [] }]
        })
        const none = yield* read(yield* send(client, request("GET", `/v1/proof/${"0".repeat(64)}`, { key })))
        assert.strictEqual(none.status, 404)

        const usage = yield* client.records.usage().pipe(asKey(key))
        assert.deepStrictEqual(usage.data, {
          accountId,
          plan: "FREE",
          environment: "test",
          month: "2026-11",
          used: 1,
          quota: 1000,
          remaining: 999,
          resetsAt: "2026-12-01T00:00:00.000Z",
          perSecond: 10
        })
      })
    ))

  it.effect("bodies the API refuses: 400 INVALID_JSON, 400 VALIDATION_ERROR naming the member, 415 without application/json, 400 CHAIN_NOT_CONFIGURED", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const notJson = yield* read(yield* send(client, anchor(key, "{\"data\":")))
        assert.strictEqual(notJson.status, 400)
        assert.strictEqual(notJson.body.errorCode, "INVALID_JSON")
        const duplicate = yield* read(yield* send(client, anchor(key, "{\"data\":{\"a\":1,\"a\":2}}")))
        assert.strictEqual(duplicate.status, 400)
        assert.strictEqual(duplicate.body.errorCode, "VALIDATION_ERROR")
        const unknownMember = yield* read(yield* send(client, anchor(key, { data: {}, colour: "red" })))
        assert.strictEqual(unknownMember.status, 400)
        assert.strictEqual(unknownMember.body.errorCode, "VALIDATION_ERROR")
        assert.include(unknownMember.body.error, "colour")
        const notObject = yield* read(yield* send(client, anchor(key, { data: [1] })))
        assert.strictEqual(notObject.status, 400)
        assert.include(notObject.body.error, "data")

        const asText = yield* read(yield* send(client, HttpClientRequest.bodyText(request("POST", "/v1/anchor", { key }), "{\"data\":{}}", "text/plain")))
        assert.strictEqual(asText.status, 415)
        assert.strictEqual(asText.body.errorCode, "UNSUPPORTED_MEDIA_TYPE")

        // Fabric is configured for test keys only (test/support/memory/api.ts NETWORKS).
        const live = yield* newKey({ environment: "live" })
        const fabric = yield* read(yield* send(client, anchor(live.key, { data: {}, chain: "fabric" })))
        assert.strictEqual(fabric.status, 400)
        assert.strictEqual(fabric.body.errorCode, "CHAIN_NOT_CONFIGURED")
        assert.strictEqual((yield* MemoryTables).records.size, 0)
      })
    ))

  it.effect("Idempotency-Key: the same body replays the first answer (Idempotent-Replayed: true), another body is 409, a key over 255 characters 400", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const body = { data: { order: 7 } }
        const first = yield* read(yield* send(client, anchor(key, body, { "idempotency-key": "order-7" })))
        assert.strictEqual(first.status, 202)
        yield* TestClock.adjust("1 hour")
        const replay = yield* send(client, anchor(key, body, { "Idempotency-Key": "order-7" }))
        const replayed = yield* read(replay)
        assert.strictEqual(replayed.status, 202)
        assert.strictEqual(replayed.headers["idempotent-replayed"], "true")
        assert.deepStrictEqual(replayed.body, first.body)
        assert.strictEqual((yield* MemoryTables).records.size, 1)

        const conflict = yield* read(yield* send(client, anchor(key, { data: { order: 8 } }, { "idempotency-key": "order-7" })))
        assert.strictEqual(conflict.status, 409)
        assert.strictEqual(conflict.body.errorCode, "IDEMPOTENCY_CONFLICT")
        // The same key on another path is another request: a conflict too.
        const otherPath = yield* read(
          yield* send(client, request("POST", "/v1/anchor/hash", { key, body: { hash: "a".repeat(64) }, headers: { "idempotency-key": "order-7" } }))
        )
        assert.strictEqual(otherPath.status, 409)
        const tooLong = yield* read(yield* send(client, anchor(key, body, { "idempotency-key": "k".repeat(256) })))
        assert.strictEqual(tooLong.status, 400)
        assert.strictEqual(tooLong.body.errorCode, "VALIDATION_ERROR")
      })
    ))

  it.effect("429 QUOTA_EXCEEDED with Retry-After when the month's quota would be passed; the per-second limit is 429 RATE_LIMIT_EXCEEDED", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { accountId, key } = yield* newKey({ plan: "FREE" })
        const tables = yield* MemoryTables
        tables.usage.set(`${accountId} 2026-11-01`, 1000)
        const over = yield* read(yield* send(client, anchor(key, { data: {} })))
        assert.strictEqual(over.status, 429)
        assert.strictEqual(over.body.errorCode, "QUOTA_EXCEEDED")
        assert.strictEqual(over.headers["retry-after"], String(Math.ceil((Date.UTC(2026, 11, 1) - T0) / 1000)))
        assert.strictEqual(over.headers["x-quota-remaining"], "0")

        // FREE: 10 per second; the first request above was one.
        const statuses: Array<number> = []
        for (let i = 0; i < 10; i++) statuses.push((yield* send(client, request("GET", "/v1/usage", { key }))).status)
        assert.deepStrictEqual(statuses, [...Array(9).fill(200), 429])
        const limited = yield* read(yield* send(client, request("GET", "/v1/usage", { key })))
        assert.strictEqual(limited.body.errorCode, "RATE_LIMIT_EXCEEDED")
        assert.strictEqual(limited.headers["retry-after"], "1")
        assert.strictEqual(limited.headers["x-ratelimit-remaining"], "0")
        yield* TestClock.adjust("1 second")
        assert.strictEqual((yield* send(client, request("GET", "/v1/usage", { key }))).status, 200)
      })
    ))

  it.effect("503 SERVICE_UNAVAILABLE with Retry-After while the database is known to be down", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const database = yield* MemoryDatabase
        yield* database.setUp(false)
        const refused = yield* read(yield* send(client, anchor(key, { data: {} })))
        assert.strictEqual(refused.status, 503)
        assert.strictEqual(refused.body.errorCode, "SERVICE_UNAVAILABLE")
        assert.strictEqual(refused.headers["retry-after"], "1")
        yield* database.setUp(true)
        assert.strictEqual((yield* send(client, anchor(key, { data: {} }))).status, 202)
        // Nothing above reached SQL: only the ingest's start tried (its queue cursors, best effort).
        assert.isTrue(database.attempted.every((statement) => statement.includes("queue_cursors")))
      })
    ))
})
