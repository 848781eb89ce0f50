/** Every documented error (SPEC 7) provoked over a real socket: status, exact body, rate-limit headers. */
import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { expectError, expectQuotaHeaders, expectRateHeaders } from "../support/expect.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

describe("errors over HTTP", () => {
  let node: TestNode
  let key: string
  let accountId: string
  beforeAll(async () => {
    node = await startNode({ config: { maxBodyBytes: 64 * 1024 } })
    accountId = await node.createAccount({ plan: "ENTERPRISE" })
    key = (await node.createKey(accountId)).key
  })
  afterAll(() => node.stop())

  const post = (body: unknown, path = "/v1/anchor") => call(node.baseUrl, "POST", path, { key, body })

  it("400 INVALID_JSON for a body that is not JSON, and for an empty body", async () => {
    for (const rawBody of ["{\"data\":", "not json", "{'data':{}}", "{\"data\":{}}x", ""]) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody, headers: { "content-type": "application/json" } })
      expectError(r, 400, "INVALID_JSON")
      expectRateHeaders(r)
      expectQuotaHeaders(r)
    }
  })

  it("400 INVALID_JSON for invalid UTF-8 (never silently replaced)", async () => {
    const rawBody = Buffer.concat([Buffer.from("{\"data\":{\"a\":\""), Buffer.from([0xff, 0xfe]), Buffer.from("\"}}")])
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody, headers: { "content-type": "application/json" } })
    expectError(r, 400, "INVALID_JSON", /UTF-8/)
  })

  it("400 VALIDATION_ERROR names the field: missing data, wrong types, unknown top-level fields", async () => {
    expectError(await post({}), 400, "VALIDATION_ERROR", /data/)
    expectError(await post({ data: [1, 2] }), 400, "VALIDATION_ERROR", /data/)
    expectError(await post({ data: "x" }), 400, "VALIDATION_ERROR", /data/)
    expectError(await post({ data: {}, extra: 1 }), 400, "VALIDATION_ERROR", /extra/)
    expectError(await post({ data: {}, chain: "bitcoin" }), 400, "VALIDATION_ERROR", /chain/)
    expectError(await post({ data: {}, packageMode: "NOPE" }), 400, "VALIDATION_ERROR", /packageMode/)
    expectError(await post({ data: {}, metadata: [1] }), 400, "VALIDATION_ERROR", /metadata/)
    expectError(await post({ hash: "abc" }, "/v1/anchor/hash"), 400, "VALIDATION_ERROR", /hash/)
    expectError(await post([1]), 400, "VALIDATION_ERROR")
  })

  it("400 VALIDATION_ERROR for strict-parsing failures, saying which", async () => {
    const cases: Array<[string, RegExp]> = [
      ["{\"data\":{\"a\":1,\"a\":2}}", /duplicate/i],
      ["{\"data\":{\"a\":1,\"\\u0061\":2}}", /duplicate/i],
      ["{\"data\":{\"s\":\"\\ud800\"}}", /surrogate/i],
      ["{\"data\":{\"n\":9007199254740993}}", /integer/i],
      ["{\"data\":{\"n\":1e400}}", /overflows/i],
      [`{"data":${"[".repeat(70)}${"]".repeat(70)}}`, /deep|depth|nest/i]
    ]
    for (const [rawBody, message] of cases) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody, headers: { "content-type": "application/json" } })
      expectError(r, 400, "VALIDATION_ERROR", message)
    }
  })

  it("400 INVALID_ENCRYPTION_KEY and 400 INVALID_WEBHOOK_URL", async () => {
    expectError(await post({ data: { a: 1 }, encryptionKey: "short" }, "/v1/anchor/encrypted"), 400, "INVALID_ENCRYPTION_KEY")
    expectError(await post({ data: { a: 1 }, encryptionKey: "é".repeat(32) }, "/v1/anchor/encrypted"), 400, "INVALID_ENCRYPTION_KEY")
    expectError(await post({ data: { a: 1 }, webhookUrl: "ftp://example.com/x" }), 400, "INVALID_WEBHOOK_URL")
    expectError(await post({ data: { a: 1 }, webhookUrl: "not a url" }), 400, "INVALID_WEBHOOK_URL")
  })

  it("401 MISSING_API_KEY / INVALID_API_KEY, limited by address and with the headers", async () => {
    const r = await call(node.baseUrl, "GET", "/v1/records")
    expectError(r, 401, "MISSING_API_KEY")
    expectRateHeaders(r)
    expectError(await call(node.baseUrl, "GET", "/v1/records", { headers: { authorization: "Bearer " } }), 401, "MISSING_API_KEY")
    expectError(await call(node.baseUrl, "GET", "/v1/records", { key: "dcp_test_short" }), 401, "INVALID_API_KEY")
  })

  it("404 RECORD_NOT_FOUND, 404 NOT_FOUND for unknown routes, 405 METHOD_NOT_ALLOWED with Allow", async () => {
    const missing = await call(node.baseUrl, "GET", "/v1/records/0123456789abcdef01234567", { key })
    expectError(missing, 404, "RECORD_NOT_FOUND")
    expectRateHeaders(missing)
    const route = await call(node.baseUrl, "GET", "/v1/nothing-here", { key })
    expectError(route, 404, "NOT_FOUND")
    expectRateHeaders(route)
    const method = await call(node.baseUrl, "DELETE", "/v1/anchor", { key })
    expectError(method, 405, "METHOD_NOT_ALLOWED")
    expect(method.headers.get("allow")).toBe("POST")
    expectRateHeaders(method)
  })

  it("routes ignore a trailing slash and the query string, on the ingest shortcut and elsewhere", async () => {
    for (const path of ["/v1/anchor/", "/v1/anchor?source=test", "/v1/anchor/hash/?x=1"]) {
      const body = path.includes("hash") ? { hash: "ab".repeat(32) } : { data: { a: 1 } }
      expect((await call(node.baseUrl, "POST", path, { key, body })).status, path).toBe(202)
    }
    for (const path of ["/v1/health/", "/v1/records/?limit=1", "/v1/usage?x"]) {
      expect((await call(node.baseUrl, "GET", path, { key })).status, path).toBe(200)
    }
    expectError(await call(node.baseUrl, "POST", "/v1/anchorx", { key, body: { data: {} } }), 404, "NOT_FOUND")
  })

  it("400 VALIDATION_ERROR for a malformed record id or query", async () => {
    expectError(await call(node.baseUrl, "GET", "/v1/records/xyz", { key }), 400, "VALIDATION_ERROR", /recordId/)
    expectError(await call(node.baseUrl, "GET", "/v1/records?limit=0", { key }), 400, "VALIDATION_ERROR", /limit/)
    expectError(await call(node.baseUrl, "GET", "/v1/records?cursor=%%%", { key }), 400, "VALIDATION_ERROR", /cursor/)
  })

  it("413 PAYLOAD_TOO_LARGE, by Content-Length and by a chunked body", async () => {
    const big = JSON.stringify({ data: { s: "x".repeat(70 * 1024) } })
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody: big, headers: { "content-type": "application/json" } })
    expectError(r, 413, "PAYLOAD_TOO_LARGE")
    expectRateHeaders(r)
    // chunked: no Content-Length
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(`${node.baseUrl}/v1/anchor`)
      const req = Http.request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "transfer-encoding": "chunked" }
      }, (res) => {
        let body = ""
        res.on("data", (d) => body += d)
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
      })
      req.on("error", reject)
      for (let i = 0; i < 10; i++) req.write(big.slice(i * 8000, (i + 1) * 8000))
      req.end(big.slice(80000))
    })
    expect(chunked.status).toBe(413)
    expect(JSON.parse(chunked.body).errorCode).toBe("PAYLOAD_TOO_LARGE")
  })

  it("415 UNSUPPORTED_MEDIA_TYPE without a JSON content type", async () => {
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody: "{\"data\":{}}", headers: { "content-type": "text/plain" } })
    expectError(r, 415, "UNSUPPORTED_MEDIA_TYPE")
    expectRateHeaders(r)
    const none = await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody: "{\"data\":{}}" })
    expectError(none, 415, "UNSUPPORTED_MEDIA_TYPE")
  })

  it("500 INTERNAL_ERROR without internals when a handler dies (a corrupt row)", async () => {
    const r = await post({ data: { ok: true } })
    expect(r.status).toBe(202)
    const id = r.json.data.recordId
    await query(node.databaseUrl, "UPDATE records SET data_jcs = '{not json' WHERE id = $1", [id])
    const broken = await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })
    expectError(broken, 500, "INTERNAL_ERROR")
    expect(broken.json.error).toBe("Internal error")
    expectRateHeaders(broken)
  })

  it("nothing changes when a request is refused", async () => {
    const before = await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM records")
    await post({ data: {}, extra: 1 })
    await call(node.baseUrl, "POST", "/v1/anchor", { key, rawBody: "{\"data\":{\"a\":1,\"a\":1}}", headers: { "content-type": "application/json" } })
    await post({ data: { a: 1 }, encryptionKey: "short" }, "/v1/anchor/encrypted")
    const after = await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM records")
    expect(after[0].n).toBe(before[0].n)
    const usage = await query<{ used: string }>(node.databaseUrl, "SELECT used FROM usage_monthly WHERE account_id = $1", [accountId])
    expect(Number(usage[0]?.used ?? 0)).toBe(Number(before[0].n))
  })
})
