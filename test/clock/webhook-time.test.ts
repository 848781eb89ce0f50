/**
 * The webhook retry ladder, claim leases and the secret-rotation overlap on virtual time: the store
 * reads the Clock (not PostgreSQL's now()), so each edge is checked to the millisecond against a real
 * PostgreSQL, with no sleeping and nothing depending on the machine's speed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { beforeAll } from "vitest"
import { LAST_ATTEMPT, retryDelayMillis } from "../../src/webhooks/schedule.ts"
import type { Claimed } from "../../src/webhooks/claimedDeliveries.ts"
import { DeliveryClaims } from "../../src/webhooks/DeliveryClaims.ts"
import { WebhookStoresLayer } from "../../src/webhooks/stores.ts"
import { WebhookSettingsStore } from "../../src/webhooks/WebhookSettingsStore.ts"
import { hexId, startClockNearNow, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const withStore = withDatabaseServices(() => url, WebhookStoresLayer)

/** An account, a record with its own webhook URL, and one event: the trigger makes one delivery. */
const oneDelivery = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = hexId()
  const account = { id: `acc_${id}` }
  // its webhook settings and secret come with it (the trigger of migrations 0007, 0013; the record is a test one)
  yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account.id}, 'clock', 'ENTERPRISE')`
  yield* sql`
    INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, webhook_url)
    VALUES (${id}, ${account.id}, 'test', ${"ab".repeat(32)}, 'evm', 'evm-test', 'SEPARATED', 'hash', 'http://127.0.0.1:9/hook')`
  yield* sql`
    INSERT INTO events (event_id, account_id, record_id, kind, payload)
    VALUES (${`evt_${id}`}, ${account.id}, ${id}, 'record.updated', '{}'::jsonb)`
  return account.id
})

const LEASE = 60_000
const claim = (token: string) => Effect.flatMap(DeliveryClaims, (s) => s.claim(10, LEASE, "node-a", token, 100))

/** Records a failed attempt of a claimed delivery, with the ladder's delay (scale 1: the seed's). */
const fail = (row: Claimed, token: string) =>
  Effect.gen(function*() {
    const store = yield* DeliveryClaims
    const [done] = yield* store.complete([{
      seq: row.seq,
      token,
      round: row.round,
      attempt: row.attempts,
      startedAt: new Date(),
      statusCode: 500,
      latencyMs: 3,
      error: "HTTP 500",
      ok: false,
      retryInMillis: retryDelayMillis(row.attempts, 1)
    }], "node-a")
    return done
  })

describe("webhook time (TestClock, real PostgreSQL)", () => {
  it.effect("the retry ladder: 1 min, 5 min, 30 min, 2 h, 24 h, then FAILED; never claimable a millisecond early", () =>
    Effect.gen(function*() {
      yield* startClockNearNow
      yield* oneDelivery
      let claimed = yield* claim("t0")
      assert.strictEqual(claimed.length, 1)
      for (let attempt = 0; attempt < LAST_ATTEMPT; attempt++) {
        assert.strictEqual(claimed[0].attempts, attempt)
        const done = yield* fail(claimed[0], `t${attempt}`)
        assert.strictEqual(done.state, "PENDING")
        const delay = retryDelayMillis(attempt, 1)!
        assert.strictEqual(delay, [60_000, 300_000, 1_800_000, 7_200_000, 86_400_000][attempt])
        assert.strictEqual(yield* (yield* DeliveryClaims).nextDueMillis, delay)
        yield* TestClock.adjust(delay - 1)
        assert.strictEqual((yield* claim(`early${attempt}`)).length, 0, `attempt ${attempt + 1} claimable before its time`)
        yield* TestClock.adjust(1)
        claimed = yield* claim(`t${attempt + 1}`)
        assert.strictEqual(claimed.length, 1, `attempt ${attempt + 1} not claimable at its time`)
      }
      const last = yield* fail(claimed[0], `t${LAST_ATTEMPT}`)
      assert.deepStrictEqual([last.state, last.nextAttemptAt], ["FAILED", null])
      yield* TestClock.adjust("30 days")
      assert.strictEqual((yield* claim("after")).length, 0)
      assert.isNull(yield* (yield* DeliveryClaims).nextDueMillis)
    }).pipe(withStore))

  it.effect("a claim is a lease: nobody else gets the delivery until it expires, then it comes back by itself", () =>
    Effect.gen(function*() {
      yield* startClockNearNow
      yield* oneDelivery
      const first = yield* claim("node-a-token")
      assert.strictEqual(first.length, 1)
      yield* TestClock.adjust(LEASE - 1)
      assert.strictEqual((yield* claim("other")).length, 0)
      // the first claim's outcome is still accepted inside its lease…
      yield* TestClock.adjust(1)
      // …but at the lease's end the delivery is claimable again (a crashed node's claim comes back)
      const again = yield* claim("node-b-token")
      assert.strictEqual(again.length, 1)
      assert.strictEqual(again[0].seq, first[0].seq)
      // and the stale claim's outcome no longer counts (its token was replaced)
      const store = yield* DeliveryClaims
      const stale = yield* store.complete([{
        seq: first[0].seq,
        token: "node-a-token",
        round: 0,
        attempt: 0,
        startedAt: new Date(),
        statusCode: 200,
        latencyMs: 1,
        error: null,
        ok: true,
        retryInMillis: null
      }], "node-a")
      assert.strictEqual(stale.length, 0)
    }).pipe(withStore))

  it.effect("secret rotation: the previous secret signs for exactly 24 hours after the rotation, then the new one alone", () =>
    Effect.gen(function*() {
      const t0 = yield* startClockNearNow
      const accountId = yield* oneDelivery
      const settings = yield* WebhookSettingsStore
      const claims = yield* DeliveryClaims
      const before = yield* settings.get(accountId, "test")
      const rotated = yield* settings.rotate(accountId, "test")
      assert.notStrictEqual(rotated.secret, before.secret)
      assert.strictEqual(rotated.previousSecretExpiresAt?.getTime(), t0 + 86_400_000)
      const [claimed] = yield* claim("r")
      const inputs = () => claims.renderInputs([claimed.seq]).pipe(Effect.map((rows) => rows[0]))
      let input = yield* inputs()
      assert.deepStrictEqual([input.signingSecret, input.nextSecret], [before.secret, rotated.secret])

      // rotating again inside the overlap replaces the pending secret and does not extend the overlap
      yield* TestClock.adjust("1 hour")
      const again = yield* settings.rotate(accountId, "test")
      assert.strictEqual(again.previousSecretExpiresAt?.getTime(), t0 + 86_400_000)
      input = yield* inputs()
      assert.deepStrictEqual([input.signingSecret, input.nextSecret], [before.secret, again.secret])

      yield* TestClock.setTime(t0 + 86_400_000 - 1)
      assert.strictEqual((yield* inputs()).signingSecret, before.secret)
      yield* TestClock.adjust(1)
      input = yield* inputs()
      assert.deepStrictEqual([input.signingSecret, input.nextSecret], [again.secret, null])
      const after = yield* settings.get(accountId, "test")
      assert.deepStrictEqual([after.rotationStartedAt, after.previousSecretExpiresAt], [null, null])
    }).pipe(withStore))
})
