/**
 * Upgrading a database to webhook settings per environment (migration 0013) with settings, a rotation
 * under way and pending deliveries written the old way: the account's one row becomes two, test and
 * live, with the same webhook, secret and rotation (so every receiver keeps verifying); the pending
 * deliveries still claim, render and are signed, each from its own environment's row from then on; an
 * account created after the upgrade has both rows, each with its own secret.
 *   npx vitest run test/webhooks/environments-upgrade.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { DeliveryClaims } from "../../src/webhooks/DeliveryClaims.ts"
import { render } from "../../src/webhooks/payload.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"
import { hmacHex } from "./support.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const id = (n: number) => n.toString(16).padStart(24, "0")
const OLD = "whsec_oldoldoldoldoldoldoldoldoldoldoldoldold"
const NEW = "whsec_newnewnewnewnewnewnewnewnewnewnewnewnew"

interface SettingsRow {
  readonly environment: string
  readonly url: string | null
  readonly events: ReadonlyArray<string>
  readonly payloadFormat: string
  readonly enabled: boolean
  readonly secret: string
  readonly previousSecret: string | null
  readonly rotatedAt: Date | null
}

describe("migration 0013 over settings and deliveries written the old way", () => {
  it.live("one row becomes test and live, equal; pending deliveries render and are signed; each environment signs with its own row after", () =>
    Effect.gen(function*() {
      yield* migrateTo(url, Object.keys(migrations).filter((name) => name < "0013"))
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_up', 'up', 'ENTERPRISE')`
      // The global webhook, and a rotation under way (an hour old: the old secret still signs).
      yield* sql`
        UPDATE webhook_settings SET url = 'http://127.0.0.1:9/hook', enabled = true, events = ARRAY['record.updated'],
          payload_format = 'envelope', secret = ${NEW}, previous_secret = ${OLD}, rotated_at = now() - interval '1 hour'
        WHERE account_id = 'acc_up'`
      for (const [n, environment] of [[1, "test"], [2, "live"]] as const) {
        yield* sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, status)
          VALUES (${id(n)}, 'acc_up', ${environment}, ${"ab".repeat(32)}, 'evm', 'net', 'SEPARATED', 'hash', 'QUEUED')`
      }
      // The old trigger makes a pending delivery of each to the one global webhook.
      yield* sql`INSERT INTO events (event_id, account_id, record_id, kind, payload) VALUES
        ('evt_up1', 'acc_up', ${id(1)}, 'record.updated', ${
        JSON.stringify({ recordId: id(1), hash: "ab".repeat(32), status: "QUEUED", changes: { metadata: {} } })
      }::jsonb),
        ('evt_up2', 'acc_up', ${id(2)}, 'record.updated', ${
        JSON.stringify({ recordId: id(2), hash: "ab".repeat(32), status: "QUEUED", changes: { metadata: {} } })
      }::jsonb)`
      const pending = yield* sql<{ seq: string; environment: string }>`
        SELECT seq::text AS seq, environment FROM webhook_deliveries WHERE state = 'PENDING' ORDER BY seq`
      assert.deepStrictEqual(pending.map((d) => d.environment), ["test", "live"])

      yield* migrateTo(url, Object.keys(migrations))
      const rows = yield* sql<SettingsRow>`
        SELECT environment, url, events, payload_format, enabled, secret, previous_secret, rotated_at
        FROM webhook_settings WHERE account_id = 'acc_up' ORDER BY environment`
      assert.deepStrictEqual(rows.map((r) => r.environment), ["live", "test"])
      const [liveRow, testRow] = rows
      assert.deepStrictEqual({ ...testRow, environment: "live" }, liveRow)
      assert.deepStrictEqual([liveRow!.url, liveRow!.enabled, liveRow!.payloadFormat, liveRow!.secret, liveRow!.previousSecret], ["http://127.0.0.1:9/hook",
        true, "envelope", NEW, OLD])

      // The pending deliveries claim and render as before (on the real clock: the overlap is an hour old):
      // the old secret signs, the new one signs -next.
      const claims = yield* DeliveryClaims
      const claimed = yield* claims.claim(10, 60_000, "node-up", "token-up", 100)
      assert.deepStrictEqual([...claimed].sort((a, b) => Number(a.seq) - Number(b.seq)).map((c) => [c.environment, c.secret, c.secretPrevious]), [["test", NEW,
        OLD], ["live", NEW, OLD]])
      const signed = (yield* claims.renderInputs(pending.map((d) => d.seq))).map((input) => ({ input, out: render(input) }))
      for (const { input, out } of signed) {
        assert.deepStrictEqual([input.signingSecret, input.nextSecret], [OLD, NEW])
        assert.strictEqual(out.signature, `sha256=${hmacHex(OLD, out.body)}`)
        assert.strictEqual(out.signatureNext, `sha256=${hmacHex(NEW, out.body)}`)
        assert.strictEqual(JSON.parse(out.body).event, "record.updated")
      }

      // From now on each environment signs with its own row: a change to test's leaves live's deliveries alone.
      yield* sql`UPDATE webhook_settings SET secret = 'whsec_testonly', previous_secret = NULL, rotated_at = NULL
        WHERE account_id = 'acc_up' AND environment = 'test'`
      const after = [...yield* claims.renderInputs(pending.map((d) => d.seq))].sort((a, b) => Number(a.seq) - Number(b.seq))
      assert.deepStrictEqual(after.map((i) => [i.signingSecret, i.nextSecret]), [["whsec_testonly", null], [OLD, NEW]])

      // An account created now gets both rows, each with a secret of its own.
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_new', 'new', 'FREE')`
      const fresh = yield* sql<{ environment: string; secret: string; url: string | null }>`
        SELECT environment, secret, url FROM webhook_settings WHERE account_id = 'acc_new' ORDER BY environment`
      assert.deepStrictEqual(fresh.map((r) => [r.environment, r.url]), [["live", null], ["test", null]])
      assert.notStrictEqual(fresh[0]!.secret, fresh[1]!.secret)
      for (const r of fresh) assert.match(r.secret, /^whsec_[A-Za-z0-9]{43}$/)
    }).pipe(
      Effect.provide(Layer.suspend(() => DeliveryClaims.layer.pipe(Layer.provideMerge(pgClientLayer(Redacted.make(url))))))
    ))
})
