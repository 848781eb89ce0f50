/**
 * How far behind this node's anchoring pipelines are: each network's leader reports, after every batcher
 * tick whose batches went out, how much longer than its batch window the oldest queued record had waited
 * (0 when none had). The webhook dispatcher reads the largest recent report and slows down while it is
 * above zero, so that deliveries never take the CPU and the database the batcher, writer and watcher need
 * (docs/webhooks.md, "Anchoring first").
 *
 * A report counts for STALE_MS: a network whose pipeline stopped (lost leadership, endpoint down: the
 * pipeline clears its report) holds nothing back.
 */
import { Clock, Context, Effect, Layer, Ref } from "effect"

/** How long a report counts without a newer one. */
export const STALE_MS = 3_000

interface Report {
  readonly excessMillis: number
  readonly at: number
}

export class AnchoringLag extends Context.Service<AnchoringLag, {
  /** The network's oldest queued record waited this much longer than its window (0: on time). */
  readonly report: (networkId: string, excessMillis: number) => Effect.Effect<void>
  /** The network's pipeline stopped or failed: its last report no longer counts. */
  readonly clear: (networkId: string) => Effect.Effect<void>
  /** The largest excess reported within the last STALE_MS across this node's networks; 0 without one. */
  readonly current: Effect.Effect<number>
}>()("anchord/anchoring/AnchoringLag") {
  static readonly layer = Layer.effect(
    AnchoringLag,
    Effect.gen(function*() {
      const reports = yield* Ref.make<ReadonlyMap<string, Report>>(new Map())
      return AnchoringLag.of({
        report: (networkId, excessMillis) =>
          Effect.flatMap(Clock.currentTimeMillis, (at) =>
            Ref.update(reports, (m) => new Map(m).set(networkId, { excessMillis: Math.max(0, excessMillis), at }))),
        clear: (networkId) =>
          Ref.update(reports, (m) => {
            if (!m.has(networkId)) return m
            const next = new Map(m)
            next.delete(networkId)
            return next
          }),
        current: Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          let worst = 0
          for (const r of (yield* Ref.get(reports)).values()) if (now - r.at <= STALE_MS && r.excessMillis > worst) worst = r.excessMillis
          return worst
        })
      })
    })
  )
}
