/**
 * Who may call the API (SPEC 2, 7) over the in-memory stores: each refusal of a bearer key with its
 * status, code and message, the rate-limit headers every answer carries, and a request without a valid
 * key counted against its address. The API has no 403: those are the console's (test/console/). Over
 * real PostgreSQL and sockets: test/auth/, test/http/.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Unauthorized } from "../../src/api/errors.ts"
import { Accounts } from "../../src/auth/Accounts.ts"
import { asKey, newKey, read, request, send, T0, withApi } from "../support/memory/api.ts"

const usage = (key?: string, authorization?: string) =>
  request("GET", "/v1/usage", { key, headers: authorization === undefined ? undefined : { authorization } })

describe("API keys (in memory)", () => {
  it.effect("401 with the code and message of each refusal, and the address's rate-limit headers", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const revoked = yield* newKey()
        yield* accounts.revokeKey(revoked.keyId)
        const suspended = yield* newKey()
        yield* accounts.suspend(suspended.accountId)
        const expiring = yield* newKey()
        const expired = yield* accounts.createKey({ accountId: expiring.accountId, environment: "live", expiresAt: new Date(T0 - 1) }).pipe(Effect.orDie)

        const cases: Array<[string, ReturnType<typeof usage>, string, string]> = [
          ["no key", usage(), "MISSING_API_KEY", "Missing API key: send Authorization: Bearer <API_KEY>"],
          ["an empty Bearer", usage(undefined, "Bearer "), "MISSING_API_KEY", "Missing API key: send Authorization: Bearer <API_KEY>"],
          ["not Bearer", usage(undefined, "Basic dXNlcjpwYXNz"), "INVALID_API_KEY",
            "Invalid API key: expected dcp_live_ or dcp_test_ followed by 32 letters and digits"],
          ["malformed", usage("dcp_prod_123"), "INVALID_API_KEY", "Invalid API key: expected dcp_live_ or dcp_test_ followed by 32 letters and digits"],
          ["unknown", usage(`dcp_test_${"A".repeat(32)}`), "INVALID_API_KEY", "Invalid API key: no such key"],
          ["revoked", usage(revoked.key), "EXPIRED_API_KEY", "API key has been revoked"],
          ["expired", usage(expired.key), "EXPIRED_API_KEY", "API key has expired"],
          ["of a suspended account", usage(suspended.key), "INVALID_API_KEY", "Invalid API key: its account is not active"]
        ]
        let remaining = 10
        for (const [what, req, errorCode, error] of cases) {
          const refused = yield* read(yield* send(client, req))
          assert.strictEqual(refused.status, 401, what)
          assert.deepStrictEqual(refused.body, { success: false, error, errorCode }, what)
          // Counted by address (10 per second without a key), no quota headers.
          assert.strictEqual(refused.headers["x-ratelimit-limit"], "10", what)
          assert.strictEqual(refused.headers["x-ratelimit-remaining"], String(--remaining), what)
          assert.isUndefined(refused.headers["x-quota-limit"], what)
        }

        // The typed client decodes the refusal into the contract's class.
        const typed = yield* client.records.usage().pipe(Effect.flip)
        assert.instanceOf(typed, Unauthorized)
        assert.strictEqual((typed as Unauthorized).errorCode, "MISSING_API_KEY")
        // The 10th request without a valid key this second is still a 401; the 11th is over the address's limit: 429.
        assert.strictEqual((yield* send(client, usage())).status, 401)
        const limited = yield* read(yield* send(client, usage()))
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.errorCode, "RATE_LIMIT_EXCEEDED")
        assert.strictEqual(limited.headers["retry-after"], "1")
      })
    ))

  it.effect("a valid key: its plan's limit and quota headers; a key sees its own environment only", () =>
    withApi((client) =>
      Effect.gen(function*() {
        const test = yield* newKey({ plan: "SCALE" })
        const ok = yield* client.records.usage({ responseMode: "response-only" }).pipe(asKey(test.key), Effect.orDie)
        assert.strictEqual(ok.status, 200)
        assert.strictEqual(ok.headers["x-ratelimit-limit"], "100")
        assert.strictEqual(ok.headers["x-ratelimit-remaining"], "99")
        assert.strictEqual(ok.headers["x-ratelimit-reset"], String(Math.floor(T0 / 1000) + 1))
        assert.strictEqual(ok.headers["x-quota-limit"], "500000")
        assert.strictEqual(ok.headers["x-quota-reset"], String(Date.UTC(2026, 11, 1) / 1000))

        const accounts = yield* Accounts
        const live = yield* accounts.createKey({ accountId: test.accountId, environment: "live" }).pipe(Effect.orDie)
        const created = yield* read(yield* send(client, request("POST", "/v1/anchor", { key: test.key, body: { data: { a: 1 } } })))
        const fromLive = yield* read(yield* send(client, request("GET", `/v1/records/${created.body.data.recordId}`, { key: live.key })))
        assert.strictEqual(fromLive.status, 404)
        const enterprise = yield* newKey({ plan: "ENTERPRISE" })
        const unlimited = yield* client.records.usage({ responseMode: "response-only" }).pipe(asKey(enterprise.key), Effect.orDie)
        assert.strictEqual(unlimited.headers["x-ratelimit-limit"], "1000")
        assert.strictEqual(unlimited.headers["x-quota-limit"], "unlimited")
        assert.strictEqual(unlimited.headers["x-quota-remaining"], "unlimited")
      })
    ))
})
