/**
 * HTTP done right (SPEC 3, last paragraph), over real sockets to a real node: `Expect: 100-continue`,
 * early refusals of a body in flight, compression, `Cache-Control`, `ETag`/304 on the OpenAPI document,
 * malformed HTTP answered with the error body and the rate-limit headers, odd bytes in paths and
 * queries (4xx, never 5xx), and the CORS headers on every kind of /v1 answer.
 *   npx vitest run test/http/protocol.test.ts
 */
import * as Net from "node:net"
import * as Zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

const ORIGIN = "https://app.example.com"
const TOLERATED = new Set(["/v1/records?collection=%FF", "/v1/records?%00=1", "/v1/records?limit=5&limit=6"])

/** A raw HTTP/1.1 exchange on one socket: what was received, as text, once `until` says so or the socket closes (bounded). */
const open = new Set<Net.Socket>()
const raw = (port: number) => {
  const socket = Net.connect(port, "127.0.0.1")
  open.add(socket)
  socket.on("close", () => open.delete(socket))
  let received = Buffer.alloc(0)
  let closed = false
  socket.on("data", (d) => {
    received = Buffer.concat([received, d])
  })
  socket.on("close", () => {
    closed = true
  })
  socket.on("error", () => {
    closed = true
  })
  const waitUntil = async (what: string, f: (text: string) => boolean, ms = 10_000) => {
    const deadline = Date.now() + ms
    while (!f(received.toString("latin1"))) {
      if (closed && !f(received.toString("latin1"))) throw new Error(`socket closed before ${what}: ${received.toString("latin1").slice(0, 500)}`)
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${received.toString("latin1").slice(0, 500)}`)
      await new Promise((r) => setTimeout(r, 10))
    }
    return received.toString("latin1")
  }
  return {
    socket,
    write: (data: string | Buffer) => new Promise<void>((resolve) => socket.write(data, () => resolve())),
    waitUntil,
    /** Resolves once the server closed the connection (bounded). */
    closed: () => waitUntil("the server to close", () => closed).then(() => true),
    isClosed: () => closed,
    text: () => received.toString("latin1"),
    reset: () => {
      received = Buffer.alloc(0)
    },
    end: () => socket.destroy()
  }
}

/** One complete response in `text` (by Content-Length): status, lowercase headers, body. */
const parseResponse = (text: string) => {
  const head = text.slice(0, text.indexOf("\r\n\r\n"))
  const [statusLine, ...lines] = head.split("\r\n")
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const i = line.indexOf(":")
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
  }
  const start = text.indexOf("\r\n\r\n") + 4
  const length = Number(headers["content-length"] ?? "0")
  return { status: Number(statusLine.split(" ")[1]), headers, body: text.slice(start, start + length), complete: text.length >= start + length }
}
const responseComplete = (text: string) => text.includes("\r\n\r\n") && parseResponse(text).complete && !text.startsWith("HTTP/1.1 100")

const expectErrorBody = (body: string, code: string) => {
  const json = JSON.parse(body)
  expect(Object.keys(json).sort()).toEqual(["error", "errorCode", "success"])
  expect(json).toMatchObject({ success: false, errorCode: code })
}
const expectRateHeaders = (headers: Record<string, string> | Headers, what = "") => {
  const get = (n: string) => headers instanceof Headers ? headers.get(n) : headers[n]
  for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) expect(get(h) ?? "", `${what} ${h}`).toMatch(/^\d+$/)
}

describe("HTTP behaviour", () => {
  let node: TestNode
  let port: number
  let key: string
  let recordId: string

  beforeAll(async () => {
    node = await startNode({ config: { corsOrigins: [ORIGIN], maxBodyBytes: 1024 * 1024 } })
    port = Number(new URL(node.baseUrl).port)
    key = (await node.createKey(await node.createAccount())).key
    recordId = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { hello: "world" } } })).json.data.recordId
  }, 60_000)
  afterAll(async () => {
    // A failed test may leave a request waiting for its body: the node's shutdown would wait for it.
    for (const socket of open) socket.destroy()
    await node?.stop()
  })

  const post = (path: string, body: string, headers: Record<string, string>) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n"

  it("Expect: 100-continue is answered when the body is wanted, and never for a request refused first", async () => {
    const body = JSON.stringify({ data: { big: "x".repeat(4000) } })
    const c = raw(port)
    await c.write(post("/v1/anchor", body, { authorization: `Bearer ${key}`, expect: "100-continue" }))
    await c.waitUntil("100 Continue", (t) => t.startsWith("HTTP/1.1 100 Continue\r\n\r\n"))
    c.reset()
    await c.write(body)
    const r = parseResponse(await c.waitUntil("the 202", responseComplete))
    expect(r.status).toBe(202)
    c.end()

    for (const headers of [{ expect: "100-continue" }, { expect: "100-continue", authorization: `Bearer ${key}`, "content-type": "text/plain" }] as Array<
      Record<string, string>
    >) {
      const refused = raw(port)
      const text = post("/v1/anchor", body, headers).replace(headers["content-type"] ? "Content-Type: application/json\r\n" : "", "")
      await refused.write(text)
      const answer = parseResponse(await refused.waitUntil("the refusal", responseComplete))
      expect(refused.text()).not.toContain("100 Continue")
      expect([401, 415]).toContain(answer.status)
      // The body was never sent: the connection cannot be reused, so the node says so.
      expect(answer.headers["connection"]).toBe("close")
      expect(await refused.closed()).toBe(true)
    }
  })

  it("a body still in flight when refused (401, 413, 415): Connection: close; a small one read in full is drained and the connection kept", async () => {
    const huge = 2 * 1024 * 1024
    for (const [headers, status] of [
      [{ authorization: `Bearer ${key}` }, 413],
      [{}, 401],
      [{ authorization: `Bearer ${key}`, "content-type": "text/plain" }, 415]
    ] as const) {
      const c = raw(port)
      const head = `POST /v1/anchor HTTP/1.1\r\nHost: x\r\nContent-Length: ${huge}\r\n` +
        ("content-type" in headers ? "" : "Content-Type: application/json\r\n") +
        Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n"
      await c.write(head + "{\"data\":{\"x\":\"" + "y".repeat(300 * 1024))
      const r = parseResponse(await c.waitUntil(`the ${status}`, responseComplete))
      expect(r.status).toBe(status)
      expect(r.headers["connection"]).toBe("close")
      expectErrorBody(r.body, status === 413 ? "PAYLOAD_TOO_LARGE" : status === 401 ? "MISSING_API_KEY" : "UNSUPPORTED_MEDIA_TYPE")
      expectRateHeaders(r.headers)
      expect(await c.closed()).toBe(true)
    }
    // A small body sent in full with a refused request: drained, and the same connection answers again.
    const c = raw(port)
    const small = JSON.stringify({ data: { s: "z".repeat(2000) } })
    await c.write(post("/v1/anchor", small, {}) + small)
    const first = parseResponse(await c.waitUntil("the 401", responseComplete))
    expect(first.status).toBe(401)
    expect(first.headers["connection"]).not.toBe("close")
    c.reset()
    await c.write(`GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n`)
    expect(parseResponse(await c.waitUntil("the health answer", responseComplete)).status).toBe(200)
    c.end()
  })

  it("compresses bodies over 1 KB when the client accepts br or gzip, and only then", async () => {
    const plain = await fetch(`${node.baseUrl}/v1/openapi.json`, { headers: { "accept-encoding": "identity" } })
    expect(plain.headers.get("content-encoding")).toBeNull()
    const text = await plain.text()
    for (const [accept, encoding] of [["br", "br"], ["gzip", "gzip"], ["gzip, deflate, br", "br"], ["br;q=0, gzip", "gzip"]] as const) {
      const r = await rawGet(port, "/v1/openapi.json", { "accept-encoding": accept })
      expect(r.headers["content-encoding"], accept).toBe(encoding)
      expect(r.headers["vary"]).toContain("Accept-Encoding")
      const bytes = Buffer.from(r.body, "latin1")
      expect(bytes.length).toBeLessThan(text.length / 4)
      expect((encoding === "br" ? Zlib.brotliDecompressSync(bytes) : Zlib.gunzipSync(bytes)).toString("utf8")).toBe(text)
    }
    // No Accept-Encoding: sent as it is (the ingest fast path does no compression work for such clients).
    const big = JSON.stringify({ data: { big: "x".repeat(3000) } })
    const uncompressed = await rawPost(port, "/v1/anchor", big, { authorization: `Bearer ${key}` })
    expect(uncompressed.status).toBe(202)
    expect(uncompressed.headers["content-encoding"]).toBeUndefined()
    const compressed = await rawPost(port, "/v1/anchor", big, { authorization: `Bearer ${key}`, "accept-encoding": "gzip" })
    expect(compressed.headers["content-encoding"]).toBe("gzip")
    expect(JSON.parse(Zlib.gunzipSync(Buffer.from(compressed.body, "latin1")).toString("utf8")).data.data.big).toHaveLength(3000)
    // Small answers are not compressed.
    const small = await rawGet(port, "/v1/health", { "accept-encoding": "gzip" })
    expect(small.headers["content-encoding"]).toBeUndefined()
  })

  it("Cache-Control: no-store on answers with record data or secrets (errors too); ETag and 304 on openapi.json", async () => {
    for (const path of [`/v1/records/${recordId}`, "/v1/records", "/v1/webhooks", "/v1/usage", "/v1/records/ffffffffffffffffffffffff"]) {
      const r = await call(node.baseUrl, "GET", path, { key })
      expect(r.headers.get("cache-control"), path).toBe("no-store")
    }
    const created = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { c: 1 } } })
    expect(created.headers.get("cache-control")).toBe("no-store")
    const doc = await fetch(`${node.baseUrl}/v1/openapi.json`)
    const etag = doc.headers.get("etag")!
    // fetch asks for gzip/br: the compressed representation's tag is the weak form of the document's
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]+"$/)
    const identity = await rawGet(port, "/v1/openapi.json", {})
    expect(`W/${identity.headers["etag"]}`).toBe(etag)
    expect(doc.headers.get("cache-control")).toBe("no-cache")
    const again = await fetch(`${node.baseUrl}/v1/openapi.json`, { headers: { "if-none-match": etag } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe("")
    expectRateHeaders(again.headers)
    const weak = await fetch(`${node.baseUrl}/v1/openapi.json`, { headers: { "if-none-match": `"other", ${etag}` } })
    expect(weak.status).toBe(304)
    expect((await fetch(`${node.baseUrl}/v1/openapi.json`, { headers: { "if-none-match": "\"other\"" } })).status).toBe(200)
  })

  it("malformed HTTP gets the JSON error body with the rate-limit headers, then the connection closes", async () => {
    const cases: Array<[string, string, number, string]> = [
      ["bad Content-Length", "POST /v1/anchor HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["Content-Length and Transfer-Encoding", "POST /v1/anchor HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
        "VALIDATION_ERROR"],
      ["two Content-Lengths", "POST /v1/anchor HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400, "VALIDATION_ERROR"],
      ["invalid method", "G@T /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["invalid header name", "GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["headers too large", `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "HEADERS_TOO_LARGE"],
      ["a 64 KB Authorization", `GET /v1/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${"k".repeat(64 * 1024)}\r\n\r\n`, 431, "HEADERS_TOO_LARGE"],
      ["a 1 MB Authorization", `GET /v1/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${"k".repeat(1024 * 1024)}\r\n\r\n`, 431, "HEADERS_TOO_LARGE"],
      ["10,000 headers", `GET /v1/health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 10_000 }, (_, i) => `X-H${i}: 1\r\n`).join("")}\r\n`, 431,
        "HEADERS_TOO_LARGE"],
      ["no Host", "GET /v1/health HTTP/1.1\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["no Host, a POST with a key",
        `POST /v1/anchor HTTP/1.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`, 400, "VALIDATION_ERROR"],
      ["no Host, a page", "GET /console/ HTTP/1.1\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["not HTTP", "HELLO\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["unknown Expect", "GET /v1/health HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 400, "VALIDATION_ERROR"],
      ["CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 405, "METHOD_NOT_ALLOWED"],
      // A broken chunk in a body being read: the handler's own answer, the connection closed after it.
      ["a broken chunk", `POST /v1/anchor HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        "Transfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\nzz\r\n", 400, "INVALID_JSON"]
    ]
    for (const [name, request, status, code] of cases) {
      const c = raw(port)
      await c.write(request)
      const r = parseResponse(await c.waitUntil(name, responseComplete))
      expect(r.status, name).toBe(status)
      expectErrorBody(r.body, code)
      expectRateHeaders(r.headers)
      expect(r.headers["connection"], name).toBe("close")
      expect(await c.closed()).toBe(true)
    }
    // HTTP/1.0 may leave Host out (RFC 9112 3.2 asks it of HTTP/1.1 only).
    const old = raw(port)
    await old.write("GET /v1/health HTTP/1.0\r\n\r\n")
    expect(parseResponse(await old.waitUntil("HTTP/1.0 without Host", responseComplete)).status).toBe(200)
    old.end()
  })

  it("%00 and other odd bytes in paths and queries: 400 or 404 with the error body, never 5xx", async () => {
    const paths = [
      "/v1/records/%00",
      "/v1/records/%ZZ",
      "/v1/records/%E0%A4%A",
      "/v1/%00",
      "/v1/records?cursor=%00",
      "/v1/records?status=%00",
      "/v1/records?limit=%00",
      "/v1/records?limit=1e2",
      "/v1/records?collection=%FF",
      "/v1/webhooks/deliveries/%00",
      "/v1/webhooks/deliveries/dlv_%00",
      "/v1/webhooks/deliveries?recordId=%00",
      "/v1/webhooks/deliveries?eventId=%00",
      "/v1/webhooks/deliveries?cursor=%00",
      "/v1/proof/%00",
      `/v1/records/${recordId}?includeDeleted=%00`,
      "/v1/records/%2F",
      "/v1/records/a%2Fb/proof",
      "/v1/records?%00=1",
      "/v1/records?limit=5&limit=6",
      "/v1/webhooks/deliveries/%F0%9F%98%80/redeliver"
    ]
    for (const path of paths) {
      const r = await call(node.baseUrl, "GET", path, { key })
      // %FF decodes to U+FFFD, a character a collection may hold, and unknown query members are
      // ignored: fine answers there, as long as they are not 5xx.
      if (TOLERATED.has(path)) expect(r.status, path).toBeLessThan(500)
      else {
        expect([400, 404, 405], `${path}: ${r.text.slice(0, 300)}`).toContain(r.status)
        expectErrorBody(r.text, r.json.errorCode)
      }
      expectRateHeaders(r.headers, `${path} ${r.status} ${r.text}`)
    }
    const rows = await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM records")
    expect(rows[0].n).toBeGreaterThan(0)
  })

  it("CORS: preflights answered for an allowed origin, the grant and exposed headers on every /v1 answer, nothing for others", async () => {
    const pre = await fetch(`${node.baseUrl}/v1/anchor`, {
      method: "OPTIONS",
      headers: { origin: ORIGIN, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, idempotency-key" }
    })
    expect(pre.status).toBe(204)
    expect(pre.headers.get("access-control-allow-origin")).toBe(ORIGIN)
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST")
    expect(pre.headers.get("access-control-allow-headers")!.toLowerCase()).toContain("idempotency-key")
    expect(pre.headers.get("access-control-max-age")).toBe("600")
    expectRateHeaders(pre.headers)
    const other = await fetch(`${node.baseUrl}/v1/anchor`, { method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" } })
    expect(other.status).toBe(204)
    expect(other.headers.get("access-control-allow-origin")).toBeNull()

    const answers = [
      await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { cors: 1 } }, headers: { origin: ORIGIN } }),
      await call(node.baseUrl, "POST", "/v1/anchor", { body: { data: {} }, headers: { origin: ORIGIN } }),
      await call(node.baseUrl, "GET", "/v1/nowhere", { headers: { origin: ORIGIN } }),
      await call(node.baseUrl, "DELETE", "/v1/usage", { key, headers: { origin: ORIGIN } }),
      await call(node.baseUrl, "GET", `/v1/records/${recordId}`, { key, headers: { origin: ORIGIN } }),
      await call(node.baseUrl, "GET", "/v1/records/nope", { key, headers: { origin: ORIGIN } })
    ]
    expect(answers.map((a) => a.status)).toEqual([202, 401, 404, 405, 200, 400])
    for (const a of answers) {
      expect(a.headers.get("access-control-allow-origin")).toBe(ORIGIN)
      expect(a.headers.get("vary")).toContain("Origin")
      const exposed = a.headers.get("access-control-expose-headers")!.toLowerCase()
      for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-quota-limit", "x-quota-remaining", "x-quota-reset", "retry-after",
        "idempotent-replayed"])
      {
        expect(exposed).toContain(h)
      }
    }
    const foreign = await call(node.baseUrl, "GET", `/v1/records/${recordId}`, { key, headers: { origin: "https://evil.example" } })
    expect(foreign.status).toBe(200)
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull()
  })
})

const rawRequest = async (port: number, text: string) => {
  const c = raw(port)
  await c.write(text)
  const r = parseResponse(await c.waitUntil("the response", responseComplete))
  c.end()
  return r
}
const rawGet = (port: number, path: string, headers: Record<string, string>) =>
  rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`)
const rawPost = (port: number, path: string, body: string, headers: Record<string, string>) =>
  rawRequest(port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n${body}`)
