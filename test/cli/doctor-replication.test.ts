// `anchord doctor` on a replicated PostgreSQL (docs/operating.md, "Patroni, etcd and HAProxy: the tested
// setup"): a primary and a streaming standby from PostgreSQL 15's binaries (scripts/bench/pg-pair.ts, the
// failover soak's), synchronous and then asynchronous. The `replication` line says whether a synchronous
// standby is streaming and synchronous_commit; a DATABASE_URL leading to the standby is fatal.
//   npx vitest run test/cli/doctor-replication.test.ts
import { Effect, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { buildPgPair, type PgPair } from "../../scripts/bench/pg-pair.ts"
import { databaseChecks } from "../../src/doctor/checks.ts"

const replicationLine = async (port: number) => {
  const results = await Effect.runPromise(databaseChecks(Redacted.make(`postgres://postgres@127.0.0.1:${port}/anchord`), 10_000))
  return results.find((r) => r.check === "replication")
}

describe("doctor: replication", { timeout: 180_000 }, () => {
  const pairs: Array<PgPair> = []
  afterAll(() => {
    for (const p of pairs) p.destroy()
  })

  it("a synchronous standby: ok, named, with synchronous_commit; the standby itself: fatal", async () => {
    const pair = await buildPgPair(true, () => undefined)
    pairs.push(pair)
    const primary = await replicationLine(pair.primary.port)
    expect(primary?.status).toBe("ok")
    expect(primary?.message).toMatch(/synchronous standby standby1 streaming, synchronous_commit on/)
    const standby = await replicationLine(pair.standby.port)
    expect(standby?.status).toBe("fatal")
    expect(standby?.message).toMatch(/leads to a standby/)
    expect(standby?.fix).toMatch(/GET \/primary/)
  })

  it("asynchronous standbys only: warn, a failover can lose records answered 202", async () => {
    const pair = await buildPgPair(false, () => undefined)
    pairs.push(pair)
    const primary = await replicationLine(pair.primary.port)
    expect(primary?.status).toBe("warn")
    expect(primary?.message).toMatch(/asynchronous standby\(s\) \(standby1\): a failover can lose records already answered 202/)
    expect(primary?.fix).toMatch(/synchronous_mode: true/)
  })
})
