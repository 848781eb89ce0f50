/**
 * The webhooks API's wire contract (docs/webhooks.md, SPEC 5) over the in-memory stores: the global
 * webhook of the key's environment, its secret's rotation on the Clock, and the delivery log's pages,
 * lookups and redelivery. Deliveries made and sent for real, over PostgreSQL: test/webhooks/.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { DeliveryRow } from "../../src/webhooks/rows.ts"
import { asKey, newKey, read, request, send, T0, withApi } from "../support/memory/api.ts"
import { MemoryTables } from "../support/memory/tables.ts"

const SECRET = /^whsec_[A-Za-z0-9]{43}$/

describe("webhooks API (in memory)", () => {
  it.effect("GET and PUT /v1/webhooks: per environment; the URL checked by the egress policy; enabled only with a URL", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const initial = yield* client.webhooks.getSettings().pipe(asKey(key))
        assert.deepInclude(initial.data, {
          url: null,
          events: ["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"],
          payloadFormat: "multichain",
          enabled: false,
          rotation: null
        })
        assert.match(initial.data.secret, SECRET)

        const put = (body: unknown) => Effect.flatMap(send(client, request("PUT", "/v1/webhooks", { key, body })), read)
        const set = yield* put({ url: "https://hooks.example.com/all", enabled: true, events: ["anchor.confirmed", "anchor.confirmed"] })
        assert.strictEqual(set.status, 200)
        assert.deepInclude(set.body.data, { url: "https://hooks.example.com/all", enabled: true, events: ["anchor.confirmed"] })
        // An enabled webhook keeps its URL: clearing it needs enabled false with it.
        const required = { success: false, error: "url: required while the webhook is enabled", errorCode: "VALIDATION_ERROR" }
        const stillEnabled = yield* put({ url: null })
        assert.strictEqual(stillEnabled.status, 400)
        assert.deepStrictEqual(stillEnabled.body, required)
        const cleared = yield* put({ url: null, enabled: false })
        assert.strictEqual(cleared.status, 200)
        assert.deepInclude(cleared.body.data, { url: null, enabled: false })
        const withoutUrl = yield* put({ enabled: true })
        assert.strictEqual(withoutUrl.status, 400)
        assert.deepStrictEqual(withoutUrl.body, required)
        for (const url of ["https://internal.example.com/hook", "ftp://hooks.example.com/", "https://nowhere.example.com/"]) {
          const refused = yield* put({ url })
          assert.strictEqual(refused.status, 400, url)
          assert.strictEqual(refused.body.errorCode, "INVALID_WEBHOOK_URL", url)
        }
        const unknownEvent = yield* put({ events: ["record.created"] })
        assert.strictEqual(unknownEvent.status, 400)
        assert.strictEqual(unknownEvent.body.errorCode, "VALIDATION_ERROR")

        // The live environment's settings are its own.
        yield* put({ url: "https://hooks.example.com/test-only" })
        const live = yield* newKey({ environment: "live" })
        const liveSettings = yield* client.webhooks.getSettings().pipe(asKey(live.key))
        assert.isNull(liveSettings.data.url)
      })
    ))

  it.effect("secret rotation: the previous secret signs for 24 h unless confirmed; a second rotation inside the overlap keeps it", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { key } = yield* newKey()
        const before = (yield* client.webhooks.getSettings().pipe(asKey(key))).data.secret
        const rotated = yield* read(yield* send(client, request("POST", "/v1/webhooks/secret/rotate", { key, body: {} })))
        assert.strictEqual(rotated.status, 200)
        assert.match(rotated.body.data.secret, SECRET)
        assert.notStrictEqual(rotated.body.data.secret, before)
        const expires = new Date(T0 + 24 * 3600_000).toISOString()
        assert.deepStrictEqual(rotated.body.data.settings.rotation, { startedAt: new Date(T0).toISOString(), previousSecretExpiresAt: expires })
        assert.strictEqual(rotated.body.data.previousSecretExpiresAt, expires)

        yield* TestClock.adjust("1 hour")
        const again = yield* client.webhooks.rotateSecret({ payload: {} }).pipe(asKey(key))
        assert.strictEqual(again.data.previousSecretExpiresAt, expires)
        const confirmed = yield* client.webhooks.confirmSecret({ payload: {} }).pipe(asKey(key))
        assert.isNull(confirmed.data.rotation)
        assert.strictEqual(confirmed.data.secret, again.data.secret)

        yield* client.webhooks.rotateSecret({ payload: {} }).pipe(asKey(key))
        yield* TestClock.adjust("24 hours")
        assert.isNull((yield* client.webhooks.getSettings().pipe(asKey(key))).data.rotation)

        const notEmpty = yield* read(yield* send(client, request("POST", "/v1/webhooks/secret/rotate", { key, body: { now: true } })))
        assert.strictEqual(notEmpty.status, 400)
        assert.strictEqual(notEmpty.body.errorCode, "VALIDATION_ERROR")
      })
    ))

  it.effect("the delivery log: newest first by cursor, filters, 404 for another account's delivery, 400 for a bad cursor; redeliver is 202 PENDING", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const { accountId, key } = yield* newKey()
        const other = yield* newKey()
        const tables = yield* MemoryTables
        const delivery = (seq: number, owner: string, state: DeliveryRow["state"]) => ({
          accountId: owner,
          seq: String(seq),
          id: `dlv_${seq}`,
          eventId: `evt_${seq}`,
          kind: "anchor.confirmed" as const,
          recordId: "0123456789abcdef01234567",
          environment: "test" as const,
          target: "account" as const,
          url: "https://hooks.example.com/all",
          state,
          round: 0,
          attempts: 1,
          nextAttemptAt: null,
          lastStatusCode: state === "SUCCEEDED" ? 200 : 500,
          lastError: null,
          createdAt: new Date(T0 - seq * 1000),
          deliveredAt: null
        })
        tables.deliveries.push(delivery(1, accountId, "SUCCEEDED"), delivery(2, accountId, "FAILED"), delivery(3, accountId, "SUCCEEDED"),
          delivery(4, other.accountId, "FAILED"))

        const first = yield* client.webhooks.listDeliveries({ query: { limit: 2 } }).pipe(asKey(key))
        assert.deepStrictEqual(first.data.deliveries.map((d) => d.id), ["dlv_3", "dlv_2"])
        const rest = yield* client.webhooks.listDeliveries({ query: { limit: 2, cursor: first.data.nextCursor! } }).pipe(asKey(key))
        assert.deepStrictEqual(rest.data.deliveries.map((d) => d.id), ["dlv_1"])
        assert.isNull(rest.data.nextCursor)
        const failed = yield* client.webhooks.listDeliveries({ query: { status: "FAILED" } }).pipe(asKey(key))
        assert.deepStrictEqual(failed.data.deliveries.map((d) => d.id), ["dlv_2"])

        const badCursor = yield* read(yield* send(client, request("GET", "/v1/webhooks/deliveries?cursor=eHl6", { key })))
        assert.strictEqual(badCursor.status, 400)
        assert.deepStrictEqual(badCursor.body, { success: false, error: "cursor: not a cursor this API issued", errorCode: "VALIDATION_ERROR" })
        const theirs = yield* read(yield* send(client, request("GET", "/v1/webhooks/deliveries/dlv_4", { key })))
        assert.strictEqual(theirs.status, 404)
        assert.strictEqual(theirs.body.errorCode, "NOT_FOUND")
        const badId = yield* read(yield* send(client, request("GET", "/v1/webhooks/deliveries/4", { key })))
        assert.strictEqual(badId.status, 400)

        const redelivered = yield* read(yield* send(client, request("POST", "/v1/webhooks/deliveries/dlv_2/redeliver", { key, body: {} })))
        assert.strictEqual(redelivered.status, 202)
        assert.deepInclude(redelivered.body.data, { id: "dlv_2", status: "PENDING", round: 1, nextAttempt: 0, nextAttemptAt: new Date(T0).toISOString() })
        const missing = yield* read(yield* send(client, request("POST", "/v1/webhooks/deliveries/dlv_4/redeliver", { key, body: {} })))
        assert.strictEqual(missing.status, 404)
      })
    ))
})
