/**
 * Partial batches held for more events (a batching environment's `maxWaitMs`, docs/webhooks.md): events of
 * one request key join the open batch of their receiver; it goes out when it holds `batchMaxEvents` or when
 * its first event has waited `maxWaitMs` (at most `holdCapMillis`, so that a held event's claim cannot expire
 * first), whichever comes first. Each caller gets its own events' outcomes back.
 *
 * Held events keep their claims (leases) and their delivery slots while they wait: a crash sends them again
 * once the leases expire, as for any attempt in flight. Sends and timers run in the caller's FiberSet, so
 * shutdown interrupts them with the dispatcher's other sends.
 */
import { Deferred, Effect, FiberSet, Ref } from "effect"
import type { BatchSettings } from "./batch.ts"

interface Open<T, O> {
  readonly id: number
  readonly rows: Array<T>
  readonly waiting: Array<Deferred.Deferred<O>>
}

export const makeOpenBatches = Effect.fnUntraced(function*<T extends BatchSettings, O>(options: {
  /** Sends one request of these rows; their outcomes in the same order (never fails). */
  readonly send: (rows: ReadonlyArray<T>) => Effect.Effect<ReadonlyArray<O>>
  readonly key: (row: T) => string
  readonly holdCapMillis: number
  readonly fibers: FiberSet.FiberSet<void, never>
}) {
  const open = yield* Ref.make<ReadonlyMap<string, Open<T, O>>>(new Map())
  let nextId = 0

  const sendNow = (batch: Open<T, O>) =>
    FiberSet.run(
      options.fibers,
      options.send(batch.rows).pipe(
        Effect.flatMap((outcomes) => Effect.forEach(batch.waiting, (d, k) => Deferred.succeed(d, outcomes[k]!), { discard: true }))
      )
    )

  /** Takes the key's open batch out if it is still `id` (the timer of a batch already sent full finds another or none). */
  const takeIf = (key: string, id: number) =>
    Ref.modify(open, (m): readonly [Open<T, O> | undefined, ReadonlyMap<string, Open<T, O>>] => {
      const batch = m.get(key)
      if (batch === undefined || batch.id !== id) return [undefined, m]
      const next = new Map(m)
      next.delete(key)
      return [batch, next]
    })

  /** Rows of one key (a batching environment whose maxWaitMs > 0): held with others of their receiver, their outcomes when sent. */
  const add = (rows: ReadonlyArray<T>): Effect.Effect<ReadonlyArray<O>> =>
    Effect.gen(function*() {
      const first = rows[0]!
      const key = options.key(first)
      const max = first.batchMaxEvents
      const wait = Math.max(0, Math.min(first.batchMaxWaitMs, options.holdCapMillis))
      const deferreds: Array<Deferred.Deferred<O>> = []
      for (const row of rows) {
        const d = yield* Deferred.make<O>()
        deferreds.push(d)
        const [full, started] = yield* Ref.modify(open,
          (m): readonly [readonly [Open<T, O> | undefined, Open<T, O> | undefined], ReadonlyMap<string, Open<T, O>>] => {
            const current = m.get(key)
            const batch = current ?? { id: nextId++, rows: [], waiting: [] }
            batch.rows.push(row)
            batch.waiting.push(d)
            const next = new Map(m)
            if (batch.rows.length >= max) next.delete(key)
            else next.set(key, batch)
            return [[batch.rows.length >= max ? batch : undefined, current === undefined ? batch : undefined], next]
          })
        if (full !== undefined) yield* sendNow(full)
        else if (started !== undefined) {
          yield* FiberSet.run(options.fibers, Effect.sleep(wait).pipe(
            Effect.andThen(takeIf(key, started.id)),
            Effect.flatMap((batch) => batch === undefined ? Effect.void : Effect.asVoid(sendNow(batch)))
          ))
        }
      }
      return yield* Effect.forEach(deferreds, Deferred.await)
    })

  return { add }
})
