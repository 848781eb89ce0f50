/**
 * Attributes that join a record's path across traces (docs/observability.md): the ingest span (the
 * POST's server span) carries `anchord.record_id`, the batch's spans `anchord.batch_id` and
 * `anchord.record_count`, a delivery `anchord.record_id` and `anchord.batch_id`.
 */
import { Context, Effect, type Fiber, Tracer } from "effect"

/** Sets attributes on the fiber's current span if it will be exported (tracing on and the span sampled). */
export const annotateFiber = (fiber: Fiber.Fiber<unknown, unknown>, attributes: () => Record<string, unknown>): void => {
  if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (span === undefined || span._tag !== "Span" || !span.sampled) return
  const values = attributes()
  for (const key in values) span.attribute(key, values[key])
}

/**
 * Sets attributes on the current span when it will be exported: nothing is computed with tracing off
 * (Effect's native tracer) or on a span the sampler dropped, so the ingest path pays one lookup.
 */
export const annotateSampled = (attributes: () => Record<string, unknown>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    annotateFiber(fiber, attributes)
    return Effect.void
  })

/** At most this many ids on one span (a batch POST of up to 1,000 records carries its count, and the first ids). */
export const MAX_IDS = 100
