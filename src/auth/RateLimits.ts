/**
 * Per-second limits (SPEC 7): by plan for keys, by client address for requests without a valid
 * key. Fixed one-second windows aligned to the clock: in memory on one node, or in Redis through
 * `effect/persistence` RateLimiter (REDIS_URL) so several nodes share the counts.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { RateLimiter } from "effect/persistence"
import { NodeRedis } from "@effect/platform-node"
import { AppConfig } from "../config.ts"

export interface LimitState {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Unix seconds when the window resets */
  readonly reset: number
  /** seconds to wait when refused */
  readonly retryAfter: number
}

export class RateLimits extends Context.Service<RateLimits, {
  readonly hit: (key: string, limit: number) => Effect.Effect<LimitState>
  /**
   * The same hit answered at once, for stores that keep their counts in memory (undefined for Redis).
   * The gateway uses it to count a request without an effect step: this runs on every request.
   */
  readonly hitNow?: ((key: string, limit: number) => LimitState) | undefined
}>()("anchord/auth/RateLimits") {
  static readonly layerNoStore = Layer.effect(
    RateLimits,
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const clock = yield* Clock.Clock
      return RateLimits.of({
        hit: (key, limit) =>
          limiter.consume({ algorithm: "fixed-window", onExceeded: "fail", window: "1 second", limit, key }).pipe(
            Effect.map((r): LimitState => ({
              allowed: true,
              limit,
              remaining: Math.max(0, r.remaining),
              reset: Math.ceil((clock.currentTimeMillisUnsafe() + Duration.toMillis(r.resetAfter)) / 1000),
              retryAfter: 0
            })),
            Effect.catchTag("RateLimiterError", (error) => {
              const reason = error.reason
              if (reason._tag === "RateLimitExceeded") {
                const wait = Duration.toMillis(reason.retryAfter)
                return Effect.succeed<LimitState>({
                  allowed: false,
                  limit,
                  remaining: 0,
                  reset: Math.ceil((clock.currentTimeMillisUnsafe() + wait) / 1000),
                  retryAfter: Math.max(1, Math.ceil(wait / 1000))
                })
              }
              // A limiter store outage must not take the API down: let the request through.
              return Effect.logWarning("rate limiter store unavailable", reason._tag).pipe(
                Effect.as<LimitState>({ allowed: true, limit, remaining: limit, reset: Math.ceil(clock.currentTimeMillisUnsafe() / 1000) + 1, retryAfter: 0 })
              )
            })
          )
      })
    })
  ).pipe(Layer.provide(RateLimiter.layer))

  /**
   * One node: a plain in-memory fixed window per key, read and written synchronously (this is on
   * every request; the generic store costs an order of magnitude more CPU for the same answer). The
   * time is the layer's Clock, read without an effect step.
   */
  static readonly layerMemory = Layer.effect(RateLimits, Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const windows = new Map<string, { second: number; count: number }>()
    const hitNow = (key: string, limit: number): LimitState => {
      const now = clock.currentTimeMillisUnsafe()
      const second = Math.floor(now / 1000)
      let w = windows.get(key)
      if (w === undefined || w.second !== second) {
        if (windows.size > 100_000) {
          for (const [k, v] of windows) if (v.second < second) windows.delete(k)
        }
        w = { second, count: 0 }
        windows.set(key, w)
      }
      const reset = second + 1
      if (w.count >= limit) return { allowed: false, limit, remaining: 0, reset, retryAfter: 1 }
      w.count++
      return { allowed: true, limit, remaining: limit - w.count, reset, retryAfter: 0 }
    }
    return RateLimits.of({ hit: (key, limit) => Effect.sync(() => hitNow(key, limit)), hitNow })
  }))

  /** Memory, or Redis (effect/persistence RateLimiter) when REDIS_URL is set, so nodes share counts. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.redisUrl)) return RateLimits.layerMemory
    return RateLimits.layerNoStore.pipe(
      Layer.provide(RateLimiter.layerStoreRedis({ prefix: "anchord:rl:" })),
      Layer.provide(NodeRedis.layer({ url: Redacted.value(config.redisUrl.value) }))
    )
  }))
}
