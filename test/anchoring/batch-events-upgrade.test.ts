/**
 * Upgrading a database to one event row per batch (migration 0012) while events written the old way
 * wait to be fanned out: their fan-out rows become plain deliveries that render from the stored payload,
 * the stored events stay in `all_events`, and a record announced before and re-queued since is marked
 * `announced` (so its silent re-anchoring after a soft delete stays silent).
 *   npx vitest run test/anchoring/batch-events-upgrade.test.ts
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

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const id = (n: number) => n.toString(16).padStart(24, "0")

describe("migration 0012 over events written the old way", () => {
  it.effect("pending fan-outs become deliveries that render; stored events stay listed; re-queued records are marked announced", () =>
    Effect.gen(function*() {
      const before = Object.keys(migrations).filter((name) => name < "0012")
      yield* migrateTo(url, before)
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_up', 'up', 'ENTERPRISE')`
      yield* sql`UPDATE webhook_settings SET url = 'http://127.0.0.1:9/hook', enabled = true WHERE account_id = 'acc_up'`
      for (const n of [1, 2]) {
        yield* sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, status)
          VALUES (${id(n)}, 'acc_up', 'test', ${"ab".repeat(32)}, 'evm', 'net', 'SEPARATED', 'hash', ${n === 1 ? "ANCHORED" : "QUEUED"})`
      }
      const payload = (n: number) =>
        JSON.stringify({
          recordId: id(n),
          hash: "ab".repeat(32),
          recordChainType: "evm",
          networkId: "net",
          anchoredAt: "2026-01-01T00:00:00.000Z",
          status: "ANCHORED",
          chainType: "evm",
          txHash: `0x${"12".repeat(32)}`,
          blockNumber: 5,
          anchors: [{
            chainType: "evm",
            networkId: "net",
            batchId: 3,
            txHash: `0x${"12".repeat(32)}`,
            blockNumber: 5,
            merkleRoot: `0x${"cd".repeat(32)}`,
            merkleProof: [],
            anchoredAt: "2026-01-01T00:00:00.000Z"
          }]
        })
      // The old confirmation: one events row per record; 0011's trigger writes their fan-out row.
      yield* sql`INSERT INTO events (event_id, account_id, record_id, kind, payload) VALUES
        ('evt_up1', 'acc_up', ${id(1)}, 'anchor.confirmed', ${payload(1)}::jsonb),
        ('evt_up2', 'acc_up', ${id(2)}, 'anchor.confirmed', ${payload(2)}::jsonb)`
      assert.strictEqual((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_fanouts`)[0]!.n, 1)
      assert.strictEqual((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries`)[0]!.n, 0)

      yield* migrateTo(url, Object.keys(migrations))
      assert.strictEqual((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_fanouts`)[0]!.n, 0)
      const deliveries = yield* sql<{ seq: string; eventId: string; state: string }>`
        SELECT seq::text AS seq, event_id, state FROM webhook_deliveries ORDER BY seq`
      assert.deepStrictEqual(deliveries.map((d) => [d.eventId, d.state]), [["evt_up1", "PENDING"], ["evt_up2", "PENDING"]])
      const listed = yield* sql<{ eventId: string }>`SELECT event_id FROM all_events ORDER BY id`
      assert.deepStrictEqual(listed.map((e) => e.eventId), ["evt_up1", "evt_up2"])
      // record 2 was announced and is QUEUED again (its chain was reset): marked; record 1 is ANCHORED
      const announced = yield* sql<{ id: string; announced: boolean }>`SELECT id, announced FROM records ORDER BY id`
      assert.deepStrictEqual(announced.map((r) => r.announced), [false, true])

      // The dispatcher renders them from the stored payload, as before.
      const inputs = yield* Effect.flatMap(DeliveryClaims, (c) => c.renderInputs(deliveries.map((d) => d.seq))).pipe(
        Effect.provide(DeliveryClaims.layer)
      )
      const bodies = inputs.map((input) => JSON.parse(render(input).body)).sort((a, b) => a.recordId.localeCompare(b.recordId))
      assert.deepStrictEqual(bodies.map((b) => [b.type, b.recordId, b.transactionHash]), [
        ["ANCHORED", id(1), `0x${"12".repeat(32)}`],
        ["ANCHORED", id(2), `0x${"12".repeat(32)}`]
      ])
    }).pipe(Effect.provide(Layer.suspend(() => pgClientLayer(Redacted.make(url))))))
})
