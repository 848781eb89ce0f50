/**
 * Per-second limits (SPEC 7): by plan for keys, by client address for requests without a valid
 * key. Fixed one-second windows aligned to the clock: in memory on one node, or in Redis through
 * `effect/persistence` RateLimiter (REDIS_URL) so several nodes share the counts.
 */
import { Clock, Context, Duration, Effect, Exit, Layer, Option, Redacted, Ref } from "effect"
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

/**
 * How long a request waits on the shared store (Redis) before its node counts it alone. Only a Redis
 * that hangs is waited on (while the connection is down a command fails at once); 250 ms was tried and
 * flapped between shared and alone on a loaded 2-core machine (soak:cluster).
 */
export const SHARED_LIMIT_WAIT_MS = 1_000

/** Fixed one-second windows per key in this process, aligned to the clock's seconds. */
const memoryWindows = (clock: Clock.Clock) => {
  const windows = new Map<string, { second: number; count: number }>()
  return (key: string, limit: number): LimitState => {
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
}

export class RateLimits extends Context.Service<RateLimits, {
  /**
   * Counts one request against `key`. Run it where it is called: the in-memory store counts at the
   * call and answers with the completed Exit (this is on every request; Admission uses such an answer
   * without an effect step), the shared store when the effect runs.
   */
  readonly hit: (key: string, limit: number) => Effect.Effect<LimitState>
}>()("anchord/auth/RateLimits") {
  /**
   * Shared counts in a RateLimiter store (Redis), each node's own in-memory window as the fallback:
   * when the store fails or has not answered within `SHARED_LIMIT_WAIT_MS`, the request is counted by
   * this node alone (a client spread over N nodes then gets up to N× its limit; it is never let through
   * unlimited, never answered 5xx, never kept waiting on Redis). One warning when the node starts
   * counting alone, one line when the store answers again; the next request after that is shared.
   */
  static readonly layerNoStore = Layer.effect(
    RateLimits,
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const clock = yield* Clock.Clock
      const local = memoryWindows(clock)
      const alone = yield* Ref.make(false)
      const counted = (shared: boolean, why?: string) =>
        Effect.flatMap(Ref.getAndSet(alone, !shared), (was) =>
          was === !shared ? Effect.void : shared
            ? Effect.logInfo("rate limiter store answers again: per-second limits shared across nodes")
            : Effect.logWarning("rate limiter store unavailable: per-second limits counted by this node alone", why ?? ""))
      return RateLimits.of({
        hit: (key, limit) =>
          limiter.consume({ algorithm: "fixed-window", onExceeded: "fail", window: "1 second", limit, key }).pipe(
            Effect.map((r): LimitState | string => ({
              allowed: true,
              limit,
              remaining: Math.max(0, r.remaining),
              reset: Math.ceil((clock.currentTimeMillisUnsafe() + Duration.toMillis(r.resetAfter)) / 1000),
              retryAfter: 0
            })),
            Effect.catchReason("RateLimiterError", "RateLimitExceeded", (reason) => {
              const wait = Duration.toMillis(reason.retryAfter)
              return Effect.succeed<LimitState | string>({
                allowed: false,
                limit,
                remaining: 0,
                reset: Math.ceil((clock.currentTimeMillisUnsafe() + wait) / 1000),
                retryAfter: Math.max(1, Math.ceil(wait / 1000))
              })
            }, (reason) => Effect.succeed<LimitState | string>(reason._tag)),
            Effect.timeoutOption(SHARED_LIMIT_WAIT_MS),
            Effect.flatMap((answer) => {
              const state = Option.getOrElse(answer, () => "timeout")
              return typeof state === "string"
                ? Effect.as(counted(false, state), local(key, limit))
                : Effect.as(counted(true), state)
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
    const count = memoryWindows(yield* Clock.Clock)
    return RateLimits.of({ hit: (key, limit) => Exit.succeed(count(key, limit)) })
  }))

  /** Memory, or Redis (effect/persistence RateLimiter) when REDIS_URL is set, so nodes share counts. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.redisUrl)) return RateLimits.layerMemory
    return RateLimits.layerNoStore.pipe(
      Layer.provide(RateLimiter.layerStoreRedis({ prefix: "anchord:rl:" })),
      Layer.provide(redisClient(Redacted.value(config.redisUrl.value)))
    )
  }))
}

/**
 * The Redis client for the limits. Commands fail at once while the connection is down (no offline
 * queue: a request must not wait for Redis to come back), and once connected it reconnects for as
 * long as the node runs (node-redis's default gives up after a connect timeout, which would leave the
 * node counting alone for good). Unreachable at start: the layer fails, `anchord start` exits.
 */
const redisClient = (url: string) => {
  let connected = false
  return NodeRedis.layer({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 2_000,
      reconnectStrategy: (retries, cause) => connected ? Math.min(2 ** retries * 50, 2_000) + Math.floor(Math.random() * 200) : cause
    }
  }).pipe(Layer.tap(() =>
    Effect.sync(() => {
      connected = true
    })
  ))
}
