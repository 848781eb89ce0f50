/**
 * The retry ladder of the seed: attempt 0 at once, then attempts 1–5 after 1 min, 5 min, 30 min,
 * 2 h and 24 h. It is applied through `next_attempt_at` in the database (it survives restarts and
 * is shared by every node); WEBHOOK_RETRY_SCALE compresses it for tests.
 */
export const webhookRetryDelaysMillis: ReadonlyArray<number> = [60_000, 300_000, 1_800_000, 7_200_000, 86_400_000]

/** The last attempt number (X-Service-Retry-Attempt goes 0 to 5). */
export const LAST_ATTEMPT = webhookRetryDelaysMillis.length

/** Delay before the attempt after `failedAttempt` (0-based), or null when it was the last one. */
export const retryDelayMillis = (failedAttempt: number, scale: number): number | null => {
  const delay = webhookRetryDelaysMillis[failedAttempt]
  return delay === undefined ? null : Math.max(1, Math.round(delay * scale))
}
