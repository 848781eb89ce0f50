/**
 * Background loops (an anchoring pipeline's batcher and watcher, the webhook dispatcher's claimer and
 * writer…): a run that fails — a database or endpoint outage — is logged and started over after a
 * pause, for as long as the node runs. The log says when a loop starts failing and when it recovers,
 * never once per tick or restart: at most one reminder per `remindEvery`, with the failures since.
 */
import { Cause, Clock, Duration, Effect } from "effect"

/** A failure's message for a log line or a health report: its first error's, at most 300 characters. */
export const errorText = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause)
  return (e instanceof Error ? e.message : String(e)).slice(0, 300)
}

export interface Supervision {
  /** The loop's name in its log lines (`<name> failing (will keep retrying)`, `<name> recovered`). */
  readonly name: string
  /** The wait after each run, whether it succeeded (a tick's period) or failed (before the restart). */
  readonly pause: Duration.Input
  /** While it keeps failing, one more warning at most this often; without it, none until it recovers. */
  readonly remindEvery?: Duration.Input | undefined
  /** Told of every failure (before its log line, if any). */
  readonly onFailure?: ((cause: Cause.Cause<unknown>) => Effect.Effect<void>) | undefined
  /** Told when a run succeeds after failures. */
  readonly onRecovery?: Effect.Effect<void> | undefined
}

/** Runs `run`, then waits `pause`, forever; failures (but interruption) are reported and retried. */
export const supervised = <E, R>(run: Effect.Effect<unknown, E, R>, options: Supervision): Effect.Effect<never, never, R> =>
  Effect.suspend(() => {
    // The loop's own state: one fiber runs it, so plain variables suffice.
    let failing = false
    let failures = 0
    let quietUntil = 0
    const remindMillis = options.remindEvery === undefined ? undefined : Duration.toMillis(options.remindEvery)
    const recovered = Effect.suspend(() => {
      if (!failing) return Effect.void
      failing = false
      failures = 0
      return Effect.andThen(options.onRecovery ?? Effect.void, Effect.logInfo(`${options.name} recovered`))
    })
    const failed = (cause: Cause.Cause<E>) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.gen(function*() {
        if (options.onFailure !== undefined) yield* options.onFailure(cause)
        const now = yield* Clock.currentTimeMillis
        failures++
        const remind = failing && remindMillis !== undefined && now >= quietUntil
        if (failing && !remind) return
        yield* Effect.logWarning(`${options.name} failing (will keep retrying)`, { error: errorText(cause), failures })
        failing = true
        failures = 0
        if (remindMillis !== undefined) quietUntil = now + remindMillis
      })
    return run.pipe(
      Effect.matchCauseEffect({ onSuccess: () => recovered, onFailure: failed }),
      Effect.andThen(Effect.sleep(options.pause)),
      Effect.forever
    )
  })
