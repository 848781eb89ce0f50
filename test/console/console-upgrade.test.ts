/**
 * Upgrading a console's database to migration 0014: emails rewritten to their one spelling (and two
 * users who become one address stop the migration, named); invitations of makers already gone removed,
 * the others given an id and tied to their maker (deleting the maker deletes them).
 *   npx vitest run test/console/console-upgrade.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { normalizeEmail } from "../../src/console/Users.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"

const before = Object.keys(migrations).filter((name) => name < "0014")
const all = Object.keys(migrations)

const withDatabase = <A, E>(body: (url: string) => Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.flatMap(Effect.promise(() => freshDatabase()), (url) => body(url).pipe(Effect.provide(pgClientLayer(Redacted.make(url)))))

describe("migration 0014 over a console's database", () => {
  it.effect("emails take their one spelling; invitations get an id, lose makers already gone and go with their maker", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* migrateTo(url, before)
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO accounts (id, name, plan, status) VALUES ('acc_up', 'up', 'FREE', 'ACTIVE')`
        yield* sql`INSERT INTO console_users (id, email, operator, account_id, role, created_at) VALUES
          ('usr_ann', ' Ann@Example.COM', false, 'acc_up', 'admin', now()),
          ('usr_bob', 'ｂob@example.com', false, 'acc_up', 'viewer', now())`
        const link = (digest: string, createdBy: string | null) =>
          sql`INSERT INTO console_links (digest, kind, email, operator, account_id, role, created_by, created_at, expires_at)
            VALUES (decode(${digest}, 'hex'), 'invitation', 'New@Example.com', false, 'acc_up', 'admin', ${createdBy}, now(), now() + interval '1 day')`
        yield* link("01".repeat(32), "usr_ann")
        yield* link("02".repeat(32), "usr_gone")
        yield* link("03".repeat(32), null)
        yield* sql`INSERT INTO console_sign_in_failures (key, window_starts_at, failures) VALUES ('email:ann@example.com', now(), 3)`

        yield* migrateTo(url, all)
        const users = yield* sql<{ id: string; email: string }>`SELECT id, email FROM console_users ORDER BY id`
        assert.deepStrictEqual(users.map((u) => [u.id, u.email]), [["usr_ann", "ann@example.com"], ["usr_bob", "bob@example.com"]])
        assert.strictEqual(normalizeEmail("ｂob@example.com"), "bob@example.com")
        const links = yield* sql<{ id: string; email: string; createdBy: string | null }>`SELECT id, email, created_by FROM console_links ORDER BY digest`
        assert.deepStrictEqual(links.map((l) => [l.email, l.createdBy]), [["new@example.com", "usr_ann"], ["new@example.com", null]])
        for (const l of links) assert.match(l.id, /^lnk_[0-9a-f]{20}$/)
        // The maker removed: their invitation goes with them.
        yield* sql`DELETE FROM console_users WHERE id = 'usr_ann'`
        assert.deepStrictEqual((yield* sql<{ createdBy: string | null }>`SELECT created_by FROM console_links`).map((l) => l.createdBy), [null])
        // The throttle starts afresh in its new table.
        assert.strictEqual((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM console_sign_in_counters`)[0]!.n, 0)
      })
    ))

  it.effect("two users who become one address stop the migration, named, and the database stays as it was", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* migrateTo(url, before)
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_a', 'a', 'FREE'), ('acc_b', 'b', 'FREE')`
        // PostgreSQL's lower() kept them apart; NFKC does not.
        yield* sql`INSERT INTO console_users (id, email, operator, account_id, role, created_at) VALUES
          ('usr_zed', 'Zed@example.com', false, 'acc_a', 'admin', now()),
          ('usr_zed2', 'ｚed@example.com', false, 'acc_b', 'admin', now())`
        const exit = yield* Effect.exit(migrateTo(url, all))
        assert.isTrue(Exit.isFailure(exit))
        assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /zed@example\.com: usr_zed, usr_zed2/)
        const users = yield* sql<{ email: string }>`SELECT email FROM console_users ORDER BY id`
        assert.deepStrictEqual(users.map((u) => u.email), ["Zed@example.com", "ｚed@example.com"])
        // Resolved by the operator, the migration goes through.
        yield* sql`DELETE FROM console_users WHERE id = 'usr_zed2'`
        yield* migrateTo(url, all)
        assert.deepStrictEqual((yield* sql<{ email: string }>`SELECT email FROM console_users`).map((u) => u.email), ["zed@example.com"])
      })
    ))
})
