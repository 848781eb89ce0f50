/**
 * Anchoring first across nodes: a network's leader reports its lag, and every node of the database sees it
 * (AnchoringLag over NOTIFY), so the other nodes' dispatchers yield too; back on time, the lag is gone everywhere.
 * Two AnchoringLag services on their own connections stand for two nodes.
 */
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "vitest"
import { AnchoringLag } from "../../src/anchoring/AnchoringLag.ts"
import { freshDatabase } from "../support/db.ts"
import { waitFor } from "../support/wait.ts"

describe("anchoring lag, shared by the nodes of a database", () => {
  const runtimes: Array<ManagedRuntime.ManagedRuntime<AnchoringLag, unknown>> = []
  afterAll(async () => {
    for (const r of runtimes) await r.dispose()
  })

  it("the leader's report reaches another node, and so does its return to on time", async () => {
    const url = Redacted.make(await freshDatabase())
    const node = () => {
      const runtime = ManagedRuntime.make(AnchoringLag.layer.pipe(Layer.provide(PgClient.layer({ url }))))
      runtimes.push(runtime)
      return {
        report: (ms: number) => runtime.runPromise(Effect.flatMap(AnchoringLag, (lag) => lag.report("net-a", ms))),
        current: () => runtime.runPromise(Effect.flatMap(AnchoringLag, (lag) => lag.current))
      }
    }
    const leader = node()
    const other = node()
    expect(await other.current()).toBe(0)
    // Reported until the other node has it (its listener may connect after the first report).
    await waitFor("the other node sees the lag", async () => {
      await leader.report(4_000)
      return (await other.current()) === 4_000 || undefined
    }, 10_000, 300)
    expect(await leader.current()).toBe(4_000)
    await leader.report(0)
    await waitFor("the other node sees it on time", async () => (await other.current()) === 0 || undefined, 10_000)
    expect(await leader.current()).toBe(0)
  })
})
