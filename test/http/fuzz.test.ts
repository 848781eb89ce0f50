/**
 * Seeded fuzz test over real sockets (SPEC 3: malformed HTTP and odd bytes get a 4xx with the error
 * body, never a 5xx): 3,000 hostile requests to a real node on PostgreSQL — truncated, huge and deeply
 * nested JSON, odd numbers and strings, invalid UTF-8, wrong content types, odd ids, paths and queries,
 * header oddities, odd methods, and raw malformed HTTP. Every answer must be below 500, carry the
 * X-RateLimit-* headers, and, when it is an error with a body, be exactly `{success:false,error,errorCode}`
 * with the errorCode of its status. The counts by outcome go to the test's log.
 *   npx vitest run test/http/fuzz.test.ts      (FUZZ_SEED=n for another seed)
 */
import * as Net from "node:net"
import * as Zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ERROR_CODES } from "../../src/api/errors.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed17)
const COUNT = 3000
const CONCURRENCY = 6
const MAX_BODY = 64 * 1024

/** Mulberry32: the same requests on every run of a seed. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface Hostile {
  readonly kind: string
  /** The bytes sent, whole. */
  readonly bytes: Buffer
  /** Close our side after sending (a body shorter than its Content-Length: otherwise the node would wait for it). */
  readonly halfClose?: boolean
  readonly head?: boolean
}

const CODE_STATUS = new Map<string, number>(Object.entries(ERROR_CODES).flatMap(([status, codes]) => codes.map((c) => [c, Number(status)] as const)))

/** The hostile requests of a seed. */
const hostile = (seed: number, key: string, recordId: string): Array<Hostile> => {
  const r = rng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(r() * xs.length)]!
  const int = (n: number) => Math.floor(r() * n)
  const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)))
  const randomText = (n: number) => Array.from({ length: n }, () => String.fromCharCode(int(0x3000))).join("")
  const pct = (b: Buffer) => [...b].map((x) => `%${x.toString(16).padStart(2, "0").toUpperCase()}`).join("")

  const ids = [recordId, "ffffffffffffffffffffffff", "%00", "%ZZ", "%", "a%00b", "..", "%2e%2e", "x".repeat(300), "%C0%AF", "%ED%A0%80", "%F0%9F%98%80",
    "00000000000000000000000G", recordId.toUpperCase(), `${recordId}%20`, "%E2%80%A8", "\u00e9", "dlv_%00", "evt_x"]
  const paths = () =>
    pick([
      `/v1/records/${pick(ids)}`,
      `/v1/records/${pick(ids)}/proof`,
      `/v1/proof/${pick(ids)}`,
      `/v1/proof/${"a".repeat(64)}`,
      `/v1/webhooks/deliveries/${pick(ids)}`,
      `/v1/webhooks/deliveries/${pick(ids)}/redeliver`,
      "/v1/records",
      "/v1/usage",
      "/v1/health",
      "/v1/openapi.json",
      "/v1/webhooks",
      "/v1/anchor",
      "/v1/nowhere",
      "/v1",
      "/v1/",
      "/v2/records",
      "/v1//records",
      "/v1/records/",
      `/v1/${pct(randomBytes(1 + int(6)))}`,
      `/v1/records/${pct(randomBytes(12))}`,
      "/v1/records?%00",
      "/v1/anchor/batch/extra"
    ])
  const queries = () =>
    pick([
      "",
      `?limit=${pick(["0", "101", "-1", "1e2", "abc", "%00", "", "50", "9".repeat(40), "1.5", " 5"])}`,
      `?cursor=${pick(["%00", "abc", "", pct(randomBytes(20)), "AAAA", "x".repeat(5000)])}`,
      `?status=${pick(["QUEUED", "queued", "%00", "DELETED", ""])}&includeDeleted=${pick(["true", "1", "%00"])}`,
      `?collection=${pick(["%00", "%FF", "a", "", "%0A", pct(randomBytes(8))])}`,
      `?mode=${pick(["hard", "soft", "x", "%00"])}`,
      `?recordId=${pick(ids)}&eventId=${pick(["evt_%00", "evt_1", "%00"])}`,
      `?${pct(randomBytes(10))}=${pct(randomBytes(10))}`,
      "?limit=1&limit=2",
      "?&&&=&="
    ])

  // JSON bodies: valid, truncated, huge, deep, odd numbers and strings, duplicates, wrong shapes.
  const numbers = ["1e400", "-0", "1E-400", "0x10", "01", "NaN", "Infinity", "-Infinity", "9007199254740993", "1.0e+2", ".5", "5.", "+1", "1_000", "- 1"]
  const strings = ["\"\\ud800\"", "\"\\udc00x\"", "\"\\u0000\"", "\"\\x41\"", "\"\\u12\"", "\"tab\there\"", "\"\\/\"", "\"\u2028\"", `"${"é".repeat(100)}"`,
    "\"\\\""]
  const value = (depth = 0): string => {
    const roll = r()
    if (depth > 3 || roll < 0.3) return pick([...numbers, ...strings, "true", "null", "1", "\"s\"", "{}", "[]"])
    if (roll < 0.65) {
      return `{${
        Array.from({ length: int(4) }, () => `${pick(["\"a\"", "\"b\"", "\"_anchor\"", "\"__proto__\"", "\"\\u0061\"", "\"\""])}:${value(depth + 1)}`).join(",")
      }}`
    }
    return `[${Array.from({ length: int(4) }, () => value(depth + 1)).join(",")}]`
  }
  const validBody = (path: string) =>
    path.endsWith("/hash") ?
      JSON.stringify({ hash: "ab".repeat(32) })
      : path.endsWith("/batch") ?
      JSON.stringify({ records: [{ data: { i: int(1000) } }, { data: { j: 1 }, collection: "fuzz" }] })
      : path.endsWith("/encrypted") ?
      JSON.stringify({ data: { e: 1 }, encryptionKey: "k".repeat(32) })
      : JSON.stringify({ data: { v: int(1000) }, collection: "fuzz" })
  const bodyFor = (path: string): Buffer => {
    const roll = r()
    const valid = validBody(path)
    if (roll < 0.12) return Buffer.from(valid)
    if (roll < 0.27) return Buffer.from(valid.slice(0, int(valid.length)))
    if (roll < 0.32) return Buffer.from(`{"data":{"big":"${"x".repeat(MAX_BODY + int(1000))}"}}`)
    if (roll < 0.4) {
      const depth = pick([63, 64, 65, 100, 1000, 20_000])
      return Buffer.from(`{"data":${"[".repeat(depth)}${"]".repeat(depth)}}`)
    }
    if (roll < 0.55) return Buffer.from(`{"data":{"n":${pick(numbers)},"s":${pick(strings)}}}`)
    if (roll < 0.65) return Buffer.from(`{"data":${value()},"metadata":${value()},"collection":${value()},"chain":${value()}}`)
    if (roll < 0.72) return Buffer.concat([Buffer.from("{\"data\":{\"s\":\""), randomBytes(1 + int(8)), Buffer.from("\"}}")])
    if (roll < 0.77) return Buffer.from(`\ufeff${valid}`)
    if (roll < 0.82) return Buffer.from(`{"data":{"a":1,"a":2}}`)
    if (roll < 0.87) return Buffer.from(pick(["", " ", "null", "[]", "[{}]", "1", "\"x\"", valid + valid, `${valid}garbage`]))
    if (roll < 0.92) return Buffer.from(randomText(1 + int(50)))
    return randomBytes(1 + int(200))
  }
  const auths = () =>
    pick([
      `Bearer ${key}`,
      `Bearer ${key}`,
      `Bearer ${key}`,
      "",
      "Bearer",
      "Bearer ",
      `bearer ${key}`,
      `Bearer  ${key}  `,
      "Basic abc",
      `Bearer ${key}x`,
      `Bearer dcp_test_${"A".repeat(31)}`,
      `Bearer ${"x".repeat(4000)}`,
      `Bearer \u00e9\u00e9`,
      "Bearer dcp_live_%00",
      undefined
    ])
  const contentTypes = () =>
    pick([
      "application/json",
      "application/json",
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json;charset=latin1",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json, text/plain",
      "application/jsonx",
      "",
      ";",
      "a".repeat(2000),
      undefined
    ])

  const request = (method: string, target: string, headers: Record<string, string | undefined>, body?: Buffer,
    options: { contentLength?: string | null } = {}) =>
  {
    const lines = [`${method} ${target} HTTP/1.1`, "Host: 127.0.0.1"]
    for (const [name, v] of Object.entries(headers)) if (v !== undefined) lines.push(`${name}: ${v}`)
    if (body !== undefined && options.contentLength !== null) lines.push(`Content-Length: ${options.contentLength ?? body.length}`)
    lines.push("Connection: close")
    return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), body ?? Buffer.alloc(0)])
  }

  const out: Array<Hostile> = []
  for (let i = 0; i < COUNT; i++) {
    const roll = r()
    if (roll < 0.45) {
      // JSON bodies to the endpoints that take one
      const path = pick(["/v1/anchor", "/v1/anchor/encrypted", "/v1/anchor/hash", "/v1/anchor/batch", `/v1/records/${recordId}`, "/v1/webhooks", "/v1/verify",
        "/v1/webhooks/secret/rotate", "/v1/anchor?x=%00"])
      const method = path.startsWith("/v1/records/") ? "PATCH" : path === "/v1/webhooks" ? "PUT" : "POST"
      const body = bodyFor(path)
      const shortBody = r() < 0.05
      out.push({
        kind: shortBody ? "body shorter than Content-Length" : "json body",
        bytes: request(method, path, {
          Authorization: r() < 0.85 ? `Bearer ${key}` : auths(),
          "Content-Type": r() < 0.85 ? "application/json" : contentTypes(),
          "Idempotency-Key": r() < 0.1 ? pick(["", "k", "k".repeat(256), "\u00e9", `fuzz-${int(5)}`]) : undefined,
          "Accept-Encoding": r() < 0.2 ? pick(["gzip", "br", "gzip;q=0", "*", "identity", "x"]) : undefined
        }, body, { contentLength: shortBody ? String(body.length + 10) : undefined }),
        halfClose: shortBody
      })
    } else if (roll < 0.7) {
      // Odd ids, paths, queries and methods
      const method = pick(["GET", "GET", "GET", "DELETE", "POST", "PUT", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO", "get"])
      const target = `${paths()}${queries()}`
      const body = method === "GET" || method === "HEAD" || method === "OPTIONS" ? (r() < 0.1 ? Buffer.from("{}") : undefined) : bodyFor("/v1/anchor")
      out.push({
        kind: "odd path or query",
        head: method === "HEAD",
        bytes: request(method, target, {
          Authorization: auths(),
          "Content-Type": contentTypes(),
          Origin: r() < 0.2 ? pick(["https://app.example.com", "null", "http://evil", "%00"]) : undefined,
          "Access-Control-Request-Method": method === "OPTIONS" ? pick(["POST", "DELETE", "X"]) : undefined,
          "If-None-Match": r() < 0.05 ? pick(["*", "\"x\"", "W/", ""]) : undefined
        }, body)
      })
    } else if (roll < 0.85) {
      // Header oddities on ordinary requests
      const headers: Record<string, string | undefined> = {
        Authorization: auths(),
        "X-Encryption-Key": r() < 0.3 ? pick(["", "k".repeat(32), "k".repeat(33), "\u00e9".repeat(32), "%00"]) : undefined,
        Expect: r() < 0.15 ? pick(["100-continue", "100-Continue", "200-ok", ""]) : undefined,
        "Accept-Encoding": r() < 0.3 ? pick(["gzip, br", "br;q=1.5", "gzip;q=abc", ",,,", "*;q=0", "x".repeat(3000)]) : undefined,
        "X-Forwarded-For": r() < 0.2 ? pick(["1.2.3.4", "%00", "::1, 10.0.0.1", "x".repeat(500)]) : undefined,
        Cookie: r() < 0.1 ? "a=\u00e9; b" : undefined,
        Range: r() < 0.05 ? "bytes=0-1" : undefined,
        "Transfer-Encoding": undefined
      }
      for (let h = 0; h < int(3); h++) headers[`X-Fuzz-${h}`] = pick(["", " ", "\t", "a".repeat(int(5000)), randomText(5).replace(/[\r\n]/g, "")])
      const method = pick(["GET", "POST"])
      const path = method === "GET" ? pick([`/v1/records/${recordId}`, "/v1/records", "/v1/usage", "/v1/health", "/v1/openapi.json"]) : "/v1/anchor"
      out.push({ kind: "header oddities",
        bytes: request(method, path, { ...headers, "Content-Type": method === "POST" ? "application/json" : undefined },
          method === "POST" ? Buffer.from(validBody(path)) : undefined) })
    } else {
      // Raw malformed HTTP
      const raw = pick([
        `GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: ${pick(["abc", "-1", "1.5", "99999999999999999999", " 1", "0x10"])}\r\n\r\n`,
        "POST /v1/anchor HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST /v1/anchor HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        `POST /v1/anchor HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${pick(["gzip", "chunked, chunked", "identity", "xchunked"])}\r\n\r\n`,
        `POST /v1/anchor HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${
          pick(["zz\r\n", "5\r\n{}\r\n0\r\n\r\n", "2;ext=" + "e".repeat(20_000) + "\r\n{}\r\n0\r\n\r\n", "2\r\n{}\r\n0\r\n\r\n"])
        }`,
        `${pick(["G@T", "GET\t", "", "GE T", "\u00e9"])} /v1/health HTTP/1.1\r\nHost: x\r\n\r\n`,
        `GET ${
          pick(["/v1/he alth", "v1/health", "*", "http://127.0.0.1/v1/health", "//v1/health", "/v1/health#frag", "/v1/\u0000", "/v1/\u00e9"])
        } HTTP/1.1\r\nHost: x\r\n\r\n`,
        `GET /v1/health HTTP/${pick(["1.2", "2.0", "0.9", "x", "1.10"])}\r\nHost: x\r\n\r\n`,
        "GET /v1/health\r\n\r\n",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        `GET /v1/health HTTP/1.1\r\nHost: x\r\n${pick(["Bad Header: 1", "X-A:\u0000", ": empty", "X-B : 1", "X-C:\r\n folded", "\u00e9: 1"])}\r\n\r\n`,
        `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(pick([9000, 20_000, 70_000]))}\r\n\r\n`,
        "GET /v1/health HTTP/1.1\nHost: x\n\n",
        `CONNECT 127.0.0.1:${int(65535)} HTTP/1.1\r\nHost: x\r\n\r\n`,
        "GET /v1/health HTTP/1.1\r\nHost: x\r\nExpect: nonsense\r\n\r\n",
        "GET /v1/health HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        `\r\n\r\n${randomText(20)}\r\n\r\n`,
        Array.from({ length: 2 + int(3) }, () => "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n").join("")
      ])
      out.push({ kind: "malformed HTTP", bytes: Buffer.from(raw, raw.includes("\u00e9") || /[\u0100-\uffff]/.test(raw) ? "utf8" : "latin1") })
    }
  }
  return out
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Buffer
}

/** Sends the bytes on a new connection and reads the first response (bounded), or undefined when the node closed without one. */
const exchange = (port: number, h: Hostile, timeoutMs = 15_000): Promise<Answer | undefined | "timeout"> =>
  new Promise((resolve) => {
    const socket = Net.connect(port, "127.0.0.1")
    let data = Buffer.alloc(0)
    let settled = false
    const finish = (a: Answer | undefined | "timeout") => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(a)
    }
    const timer = setTimeout(() => finish(parse(data, h.head) ?? "timeout"), timeoutMs)
    socket.on("data", (d) => {
      data = Buffer.concat([data, d])
      const a = parse(data, h.head)
      if (a !== undefined) finish(a)
    })
    socket.on("error", () => finish(parse(data, h.head)))
    socket.on("close", () => finish(parse(data, h.head)))
    socket.write(h.bytes, () => {
      if (h.halfClose) socket.end()
    })
  })

/** The first complete response in `data` (skipping interim 1xx), or undefined. */
const parse = (data: Buffer, head = false): Answer | undefined => {
  let offset = 0
  for (;;) {
    const end = data.indexOf("\r\n\r\n", offset)
    if (end === -1) return undefined
    const [statusLine, ...lines] = data.subarray(offset, end).toString("latin1").split("\r\n")
    const status = Number(statusLine.split(" ")[1])
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const i = line.indexOf(":")
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
    }
    if (status >= 100 && status < 200) {
      offset = end + 4
      continue
    }
    const start = end + 4
    if (head || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) }
    if (headers["transfer-encoding"] === "chunked") {
      const chunks: Array<Buffer> = []
      let at = start
      for (;;) {
        const lineEnd = data.indexOf("\r\n", at)
        if (lineEnd === -1) return undefined
        const size = parseInt(data.subarray(at, lineEnd).toString("latin1"), 16)
        if (size === 0) return { status, headers, body: Buffer.concat(chunks) }
        if (data.length < lineEnd + 2 + size + 2) return undefined
        chunks.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
        at = lineEnd + 2 + size + 2
      }
    }
    const length = Number(headers["content-length"] ?? "0")
    if (data.length < start + length) return undefined
    return { status, headers, body: data.subarray(start, start + length) }
  }
}

const decoded = (a: Answer) =>
  a.headers["content-encoding"] === "gzip" ?
    Zlib.gunzipSync(a.body)
    : a.headers["content-encoding"] === "br" ?
    Zlib.brotliDecompressSync(a.body)
    : a.body

describe(`fuzz: ${COUNT} hostile requests (seed ${SEED})`, () => {
  let node: TestNode
  let port: number
  let key: string
  let recordId: string

  beforeAll(async () => {
    node = await startNode({ config: { maxBodyBytes: MAX_BODY, anonymousRatePerSecond: 100_000, corsOrigins: ["https://app.example.com"] } })
    port = Number(new URL(node.baseUrl).port)
    key = (await node.createKey(await node.createAccount({ ratePerSecond: 100_000 }))).key
    recordId = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { seed: true } } })).json.data.recordId
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
  })

  it("no 5xx; every answer carries the rate-limit headers; every error body is exactly {success:false,error,errorCode}", async () => {
    const requests = hostile(SEED, key, recordId)
    const byStatus = new Map<string, number>()
    const byKind = new Map<string, Map<string, number>>()
    const problems: Array<string> = []
    let next = 0
    const worker = async () => {
      while (next < requests.length) {
        const h = requests[next++]!
        const answer = await exchange(port, h)
        const outcome = answer === undefined ? "closed without an answer" : answer === "timeout" ? "timeout" : String(answer.status)
        byStatus.set(outcome, (byStatus.get(outcome) ?? 0) + 1)
        const kind = byKind.get(h.kind) ?? new Map<string, number>()
        kind.set(outcome, (kind.get(outcome) ?? 0) + 1)
        byKind.set(h.kind, kind)
        const what = () => `${h.kind}: ${h.bytes.subarray(0, 160).toString("latin1").replace(/\r\n/g, "⏎")}`
        if (answer === "timeout") {
          problems.push(`no answer within 15 s: ${what()}`)
          continue
        }
        if (answer === undefined) {
          // Only a request the node cannot frame may be closed without an answer: one whose body never arrived.
          if (!h.halfClose) problems.push(`closed without an answer: ${what()}`)
          continue
        }
        if (answer.status >= 500) problems.push(`${answer.status}: ${what()} → ${decoded(answer).toString("utf8").slice(0, 200)}`)
        for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
          if (!/^\d+$/.test(answer.headers[name] ?? "")) problems.push(`${answer.status} without ${name}: ${what()}`)
        }
        if (answer.status >= 400 && !h.head) {
          let json: any
          try {
            json = JSON.parse(decoded(answer).toString("utf8"))
          } catch {
            problems.push(`${answer.status} body is not JSON: ${what()}`)
            continue
          }
          const exact = typeof json === "object" && json !== null && Object.keys(json).sort().join() === "error,errorCode,success" &&
            json.success === false && typeof json.error === "string" && CODE_STATUS.get(json.errorCode) === answer.status
          if (!exact) problems.push(`${answer.status} body ${JSON.stringify(json).slice(0, 200)}: ${what()}`)
        }
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    const sorted = [...byStatus.entries()].sort(([a], [b]) => a.localeCompare(b))
    console.log(`fuzz seed ${SEED}: ${requests.length} requests by outcome: ${sorted.map(([s, n]) => `${s}: ${n}`).join(", ")}`)
    for (const [kind, counts] of byKind) {
      console.log(`  ${kind}: ${[...counts.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}: ${n}`).join(", ")}`)
    }
    expect(problems.slice(0, 20)).toEqual([])
    expect([...byStatus.values()].reduce((a, b) => a + b, 0)).toBe(COUNT)
    // The node is still healthy afterwards.
    expect((await call(node.baseUrl, "GET", "/v1/health")).status).toBe(200)
  }, 300_000)
})
