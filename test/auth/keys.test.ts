/** API keys (SPEC 2): every way a key can be wrong, and the environments that keys separate. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { Accounts } from "../../src/auth/Accounts.ts"
import { API_KEY_PATTERN, generateApiKey } from "../../src/auth/apiKeys.ts"
import { query } from "../support/db.ts"
import { expectError, expectRateHeaders } from "../support/expect.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"

describe("API keys", () => {
  let node: TestNode
  let accountId: string
  beforeAll(async () => {
    node = await startNode()
    accountId = await node.createAccount({ plan: "STARTUP" })
  })
  afterAll(() => node.stop())

  it("generates dcp_test_/dcp_live_ + 32 alphanumerics, stored only as a digest", async () => {
    for (let i = 0; i < 200; i++) expect(generateApiKey(i % 2 ? "live" : "test")).toMatch(API_KEY_PATTERN)
    const { key, id } = await node.createKey(accountId, "live")
    expect(key).toMatch(/^dcp_live_[A-Za-z0-9]{32}$/)
    const rows = await query<Record<string, unknown>>(node.databaseUrl, "SELECT * FROM api_keys WHERE id = $1", [id])
    expect(JSON.stringify(rows)).not.toContain(key.slice(9))
    expect(rows[0].display).toBe(`${key.slice(0, 13)}…${key.slice(-4)}`)
  })

  it("a valid key works and carries the plan's headers", async () => {
    const { key } = await node.createKey(accountId)
    const r = await call(node.baseUrl, "GET", "/v1/usage", { key })
    expect(r.status).toBe(200)
    expect(r.json.data.plan).toBe("STARTUP")
    expect(r.json.data.quota).toBe(50_000)
    expectRateHeaders(r, 50)
    expect(r.headers.get("x-quota-limit")).toBe("50000")
  })

  it("missing, malformed and unknown keys are 401 with their codes", async () => {
    expectError(await call(node.baseUrl, "GET", "/v1/usage"), 401, "MISSING_API_KEY")
    expectError(await call(node.baseUrl, "GET", "/v1/usage", { headers: { authorization: "Basic abc" } }), 401, "INVALID_API_KEY")
    for (const bad of ["dcp_test_", "dcp_prod_" + "a".repeat(32), "dcp_test_" + "a".repeat(31), "dcp_test_" + "a".repeat(33),
      "dcp_test_" + "a".repeat(31) + "-"])
    {
      const r = await call(node.baseUrl, "GET", "/v1/usage", { key: bad })
      expectError(r, 401, "INVALID_API_KEY", /expected dcp_live_ or dcp_test_/)
      expectRateHeaders(r)
    }
    expectError(await call(node.baseUrl, "GET", "/v1/usage", { key: generateApiKey("test") }), 401, "INVALID_API_KEY", /no such key/)
  })

  it("a revoked key is 401 EXPIRED_API_KEY saying revoked; an expired one saying expired", async () => {
    const { key, id } = await node.createKey(accountId)
    expect((await call(node.baseUrl, "GET", "/v1/usage", { key })).status).toBe(200)
    await node.revokeKey(id)
    expectError(await call(node.baseUrl, "GET", "/v1/usage", { key }), 401, "EXPIRED_API_KEY", /revoked/)
    // Valid for 3 s: room for the first request on a loaded machine (a few ms on a quiet one).
    const expiresAt = new Date(Date.now() + 3_000)
    const soon = await node.createKey(accountId, "test", expiresAt)
    expect((await call(node.baseUrl, "GET", "/v1/usage", { key: soon.key })).status).toBe(200)
    await waitFor("the key's expiry time to pass", async () => Date.now() > expiresAt.getTime(), 10_000, 20)
    expectError(await call(node.baseUrl, "GET", "/v1/usage", { key: soon.key }), 401, "EXPIRED_API_KEY", /expired/)
  })

  it("keys can only be created for an active account; a pending account's key does not exist yet", async () => {
    const pending = await node.createAccount({ activate: false })
    const result = await node.runtime.runPromise(
      Effect.flip(Effect.flatMap(Accounts, (a) => a.createKey({ accountId: pending, environment: "test" })))
    )
    expect((result as { _tag: string })._tag).toBe("AccountNotActive")
  })

  it("test and live environments never see each other's records (404)", async () => {
    const test = (await node.createKey(accountId, "test")).key
    const live = (await node.createKey(accountId, "live")).key
    const other = (await node.createKey(await node.createAccount())).key
    const created = await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { env: "test" } } })
    expect(created.status).toBe(202)
    expect(created.json.data.environment).toBe("test")
    const id = created.json.data.recordId
    expectError(await call(node.baseUrl, "GET", `/v1/records/${id}`, { key: live }), 404, "RECORD_NOT_FOUND")
    expectError(await call(node.baseUrl, "GET", `/v1/records/${id}`, { key: other }), 404, "RECORD_NOT_FOUND")
    expectError(await call(node.baseUrl, "DELETE", `/v1/records/${id}`, { key: live }), 404, "RECORD_NOT_FOUND")
    expect((await call(node.baseUrl, "GET", "/v1/records", { key: live })).json.data.records).toEqual([])
    expectError(await call(node.baseUrl, "GET", `/v1/proof/${created.json.data.hash}`, { key: live }), 404, "RECORD_NOT_FOUND")
    expect((await call(node.baseUrl, "GET", `/v1/records/${id}`, { key: test })).status).toBe(200)
  })
})
