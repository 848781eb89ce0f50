import { expect } from "vitest"

/** The documented error body, exactly: no other members. */
export const expectError = (
  r: { status: number; json: any; headers: Headers },
  status: number,
  errorCode: string,
  message?: RegExp
) => {
  expect({ status: r.status, errorCode: r.json?.errorCode }).toEqual({ status, errorCode })
  expect(Object.keys(r.json).sort()).toEqual(["error", "errorCode", "success"])
  expect(r.json.success).toBe(false)
  expect(typeof r.json.error).toBe("string")
  expect(r.json.error.length).toBeGreaterThan(0)
  expect(r.json.error).not.toMatch(/ at .*\.ts:\d+|node_modules|Error: |stack/i)
  if (message) expect(r.json.error).toMatch(message)
  expect(r.headers.get("content-type")).toMatch(/^application\/json/)
}

/** X-RateLimit-* on every /v1 response, errors included. */
export const expectRateHeaders = (r: { headers: Headers }, limit?: number) => {
  const l = r.headers.get("x-ratelimit-limit")
  const remaining = r.headers.get("x-ratelimit-remaining")
  const reset = r.headers.get("x-ratelimit-reset")
  expect(l, "X-RateLimit-Limit").toMatch(/^\d+$/)
  expect(remaining, "X-RateLimit-Remaining").toMatch(/^\d+$/)
  expect(reset, "X-RateLimit-Reset").toMatch(/^\d+$/)
  const now = Math.floor(Date.now() / 1000)
  expect(Number(reset)).toBeGreaterThanOrEqual(now)
  expect(Number(reset)).toBeLessThanOrEqual(now + 2)
  if (limit !== undefined) expect(Number(l)).toBe(limit)
}

export const expectQuotaHeaders = (r: { headers: Headers }) => {
  expect(r.headers.get("x-quota-limit")).toMatch(/^(\d+|unlimited)$/)
  expect(r.headers.get("x-quota-remaining")).toMatch(/^(\d+|unlimited)$/)
  expect(r.headers.get("x-quota-reset")).toMatch(/^\d+$/)
}
