/** Plans exactly as the seed lists them. ENTERPRISE: unlimited month, per-second limit set per account. */
import { PlanName } from "../api/recordSchemas.ts"

export { PlanName }
export const PlanNames = PlanName.literals

export interface Plan {
  readonly name: PlanName
  /** null = unlimited */
  readonly monthlyQuota: number | null
  readonly perSecond: number
}

/** ENTERPRISE accounts without their own `rate_per_second` get this. */
export const ENTERPRISE_DEFAULT_PER_SECOND = 1000

export const Plans: Readonly<Record<PlanName, Plan>> = {
  FREE: { name: "FREE", monthlyQuota: 1_000, perSecond: 10 },
  STARTUP: { name: "STARTUP", monthlyQuota: 50_000, perSecond: 50 },
  SCALE: { name: "SCALE", monthlyQuota: 500_000, perSecond: 100 },
  ENTERPRISE: { name: "ENTERPRISE", monthlyQuota: null, perSecond: ENTERPRISE_DEFAULT_PER_SECOND }
}

/** First instant of the next calendar month (UTC): when the monthly quota resets. */
export const nextMonthStart = (now: Date): Date => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))
export const monthStart = (now: Date): string => `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}-01`

let cached = { from: 0, until: 0, month: "", resetSeconds: "" }

/**
 * The current month (as monthStart) and its reset instant in Unix seconds (for X-Quota-Reset),
 * recomputed only when the month turns: these are read several times per request.
 */
export const currentMonth = (nowMs: number): { readonly month: string; readonly resetSeconds: string } => {
  if (nowMs >= cached.until || nowMs < cached.from) {
    const now = new Date(nowMs)
    const next = nextMonthStart(now).getTime()
    cached = { from: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1), until: next, month: monthStart(now), resetSeconds: String(next / 1000) }
  }
  return cached
}
