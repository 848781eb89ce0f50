// Which node leads a network, as the console's Networks page learns it from PostgreSQL's lock table
// (ConsoleStats.leader): another session holding the leadership lock is found with its address and
// start; a free lock, or another network's, is nobody's. Real PostgreSQL, a real advisory lock.
//   npx vitest run test/console/leader.test.ts
import * as Crypto from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, String as Str } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { leaderLockKey } from "../../src/anchoring/Leadership.ts"
import { ConsoleStats } from "../../src/console/ConsoleStats.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { adminUrl } from "../support/db.ts"

describe("ConsoleStats.leader", () => {
  it("names the session that holds a network's lock (the leading node), and nobody once it lets go", async () => {
    const url = Redacted.make(adminUrl())
    // Unique per run: the lock table is shared by every test database's sessions on this server.
    const key = leaderLockKey("evm", `leader-test-${Crypto.randomBytes(4).toString("hex")}`)
    const stats = ConsoleStats.layer.pipe(
      Layer.provide(Layer.succeed(EvmNetworks, EvmNetworks.of({ networks: [] }))),
      // As the node's pool names columns (src/db/Database.ts).
      Layer.provide(PgClient.layer({ url, transformResultNames: Str.snakeToCamel }))
    )
    const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const console = yield* ConsoleStats
      const before = yield* console.leader(key)
      // "Another node": its own pool and session, which takes the lock as Pipeline.ts does.
      const other = yield* Layer.build(PgClient.layer({ url }))
      const otherSql = Context.get(other, SqlClient.SqlClient)
      const conn = yield* otherSql.reserve
      yield* conn.executeValues("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", [key])
      const held = yield* console.leader(key)
      const otherKey = yield* console.leader(leaderLockKey("evm", "not-this-network"))
      yield* conn.executeValues("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key])
      const after = yield* console.leader(key)
      return { before, held, otherKey, after }
    }).pipe(Effect.provide(stats))))
    expect(result.before).toBeUndefined()
    expect(result.held).toBeDefined()
    expect(result.held!.clientAddress).toMatch(/^(127\.0\.0\.1|::1)$/)
    expect(result.held!.since.getTime()).toBeLessThanOrEqual(Date.now())
    expect(Date.now() - result.held!.since.getTime()).toBeLessThan(60_000)
    expect(result.otherKey).toBeUndefined()
    expect(result.after).toBeUndefined()
  })
})
