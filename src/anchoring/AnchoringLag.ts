/**
 * How far behind the anchoring pipelines are: each network's leader reports, after every batcher tick whose
 * batches went out, how much longer than its batch window the oldest queued record had waited (0 when none
 * had). The webhook dispatcher reads the largest recent report and slows down while it is above zero, so that
 * deliveries never take the CPU and the database the batcher, writer and watcher need (docs/webhooks.md,
 * "Anchoring first").
 *
 * Reports are shared by every node of the database: a leader NOTIFYs `anchord_anchoring_lag` while its network
 * lags (at most every NOTIFY_EVERY_MS, and once when it is back on time), and every node listens, so the
 * dispatchers of the other nodes, which share the leader's PostgreSQL, yield too.
 *
 * A report counts for STALE_MS: a network whose pipeline stopped (lost leadership, endpoint down: the
 * pipeline clears its report) holds nothing back.
 */
import { Clock, Context, Effect, Layer, Queue, Ref, Schema } from "effect"
import { PgClient } from "@effect/sql-pg"
import { supervised } from "../supervision.ts"

/** How long a report counts without a newer one. */
export const STALE_MS = 3_000
/** The channel the leaders' reports go out on. */
const CHANNEL = "anchord_anchoring_lag"
/** The most often one network's lag is sent to the other nodes. */
const NOTIFY_EVERY_MS = 250

interface Report {
  readonly excessMillis: number
  readonly at: number
}

/** A report as it travels between nodes. */
const Notice = Schema.fromJsonString(Schema.Struct({ networkId: Schema.String, excessMillis: Schema.Number }))
const decodeNotice = Schema.decodeUnknownOption(Notice)

export class AnchoringLag extends Context.Service<AnchoringLag, {
  /** The network's oldest queued record waited this much longer than its window (0: on time). */
  readonly report: (networkId: string, excessMillis: number) => Effect.Effect<void>
  /** The network's pipeline stopped or failed: its last report no longer counts. */
  readonly clear: (networkId: string) => Effect.Effect<void>
  /** The largest excess reported within the last STALE_MS across the networks of every node; 0 without one. */
  readonly current: Effect.Effect<number>
}>()("anchord/anchoring/AnchoringLag") {
  static readonly layer = Layer.effect(
    AnchoringLag,
    Effect.gen(function*() {
      const pg = yield* PgClient.PgClient
      const reports = yield* Ref.make<ReadonlyMap<string, Report>>(new Map())
      /** Per network: when its lag was last sent, and whether that was a lag (a 0 follows once). */
      const sent = yield* Ref.make<ReadonlyMap<string, Report>>(new Map())
      const remember = (networkId: string, excessMillis: number) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) => Ref.update(reports, (m) => new Map(m).set(networkId, { excessMillis: Math.max(0, excessMillis), at })))

      // Every node's reports, this one's included (the same value again). A lost connection loses no state: reports
      // go stale by themselves, and the next ones arrive once the listener is back.
      yield* supervised(
        Effect.scoped(Effect.gen(function*() {
          const notices = yield* pg.listen(CHANNEL)
          while (true) {
            const notice = decodeNotice((yield* Queue.take(notices)).payload)
            if (notice._tag === "Some") yield* remember(notice.value.networkId, notice.value.excessMillis)
          }
        })),
        { name: "anchoring lag listener", pause: 1_000, remindEvery: "1 minute" }
      ).pipe(Effect.forkScoped)

      const share = Effect.fnUntraced(function*(networkId: string, excessMillis: number) {
        const now = yield* Clock.currentTimeMillis
        const due = yield* Ref.modify(sent, (m): [boolean, ReadonlyMap<string, Report>] => {
          const last = m.get(networkId)
          const send = excessMillis > 0 ? last === undefined || now - last.at >= NOTIFY_EVERY_MS : last !== undefined && last.excessMillis > 0
          return [send, send ? new Map(m).set(networkId, { excessMillis, at: now }) : m]
        })
        if (!due) return
        // A report that does not reach the others only means they yield a little later.
        yield* pg.notify(CHANNEL, JSON.stringify({ networkId, excessMillis })).pipe(Effect.ignore)
      })

      return AnchoringLag.of({
        report: (networkId, excessMillis) => Effect.andThen(remember(networkId, excessMillis), share(networkId, excessMillis)),
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
