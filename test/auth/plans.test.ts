/** The month helpers behind quotas and X-Quota-Reset, including the cached current month. */
import { describe, expect, it } from "vitest"
import { currentMonth, monthStart, nextMonthStart } from "../../src/auth/plans.ts"

describe("plans: months", () => {
  it("monthStart / nextMonthStart are UTC calendar months", () => {
    expect(monthStart(new Date("2026-12-31T23:59:59.999Z"))).toBe("2026-12-01")
    expect(nextMonthStart(new Date("2026-12-31T23:59:59.999Z")).toISOString()).toBe("2027-01-01T00:00:00.000Z")
  })

  it("currentMonth turns exactly at the month boundary, and back if the clock goes back", () => {
    const boundary = Date.parse("2027-01-01T00:00:00.000Z")
    expect(currentMonth(boundary - 1)).toMatchObject({ month: "2026-12-01", resetSeconds: String(boundary / 1000) })
    expect(currentMonth(boundary)).toMatchObject({ month: "2027-01-01", resetSeconds: String(Date.parse("2027-02-01T00:00:00Z") / 1000) })
    expect(currentMonth(boundary - 1).month).toBe("2026-12-01")
    expect(currentMonth(Date.parse("2026-03-15T12:00:00Z")).month).toBe("2026-03-01")
    expect(currentMonth(Date.now()).month).toBe(monthStart(new Date()))
  })
})
