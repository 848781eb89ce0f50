/**
 * Secret rotation (SPEC 5.5) over `webhook_settings` (migration 0007): `secret` is always the newest
 * secret; after a rotation the previous one keeps signing x-webhook-signature for the overlap (24 h
 * after `rotated_at`, or until the account confirms), while the newest signs x-webhook-signature-next.
 *
 * The rule is read by the settings store (what GET /v1/webhooks shows, what a rotation keeps) and by the
 * dispatcher's renderer (which secrets sign a delivery), as SQL over the Clock's time passed in (`now`
 * is a placeholder, e.g. `$2`), never PostgreSQL's now(): one clock for the node and its tests.
 */

/** The old secret keeps signing x-webhook-signature this long after a rotation, unless confirmed. */
export const ROTATION_OVERLAP_SQL = "interval '24 hours'"

/** Whether the settings row (columns prefixed by `t`, e.g. `s.`) is inside a rotation overlap at `now`. */
export const inOverlap = (now: string, t = "") => `${t}previous_secret IS NOT NULL AND ${t}rotated_at > ${now}::timestamptz - ${ROTATION_OVERLAP_SQL}`
