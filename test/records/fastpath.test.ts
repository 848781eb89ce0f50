/**
 * The ingest fast path (src/app/gateway.ts) is the one exception to "every request goes through
 * HttpApi": this seeded differential test sends the same record-creating requests (valid, invalid,
 * odd, idempotent, over quota, unauthenticated) to a node serving them on the fast path and to a node
 * serving them through the HttpApi endpoints (INGEST_FAST_PATH=false), and expects the same status,
 * body and headers from both, byte for byte once record ids and times are masked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

/** Mulberry32: the same requests on every run. */
const rng = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface Request {
  readonly path: string
  readonly rawBody?: string
  readonly contentType?: string | null
  readonly idempotencyKey?: string
  readonly auth: "key" | "free" | "none" | "bad"
}

const VALUES = [
  "{}",
  "{\"a\":1}",
  "{\"n\":-0.5e3,\"t\":true,\"z\":null}",
  "{\"s\":\"plain text\"}",
  "{\"esc\":\"tab\\tquote\\\"slash\\\\\"}",
  "{\"\\u0061b\":\"name escaped\"}",
  "{\"uni\":\"h\u00e9llo \u{1F600}\",\"arr\":[1,[2,{\"x\":[]}]]}",
  "{\"__proto__\":{\"p\":1},\"constructor\":2}",
  "{\"deep\":{\"a\":{\"b\":{\"c\":{\"d\":[1,2,3]}}}}}",
  "{\"big\":9007199254740991,\"small\":1e-7}",
  "{\"k\":\"a\\u0000b\"}"
]
const BAD_BODIES = [
  "",
  "   ",
  "not json",
  "{\"data\":",
  "{\"data\":{}}x",
  "{\"data\":{\"a\":1,\"a\":2}}",
  "{\"data\":{\"s\":\"\\ud800\"}}",
  "{\"data\":{\"n\":9007199254740993}}",
  "{\"data\":{\"n\":1e400}}",
  `{"data":${"[".repeat(70)}${"]".repeat(70)}}`,
  "[1]",
  "null",
  "{\"data\":[1]}",
  "{\"data\":\"x\"}",
  "{\"data\":{},\"extra\":1}",
  "{\"data\":{},\"chain\":\"bitcoin\"}",
  "{\"data\":{},\"packageMode\":\"NOPE\"}",
  "{\"data\":{},\"metadata\":[1]}",
  "{\"data\":{},\"metadata\":{\"k\":\"a\\u0000b\"}}",
  "{\"data\":{\"_anchor\":1},\"packageMode\":\"IN_PLACE\"}",
  "{\"data\":{},\"webhookUrl\":\"ftp://x\"}",
  "{\"data\":{},\"webhookUrl\":\"not a url\"}"
]

const pick = <A>(r: () => number, list: ReadonlyArray<A>): A => list[Math.floor(r() * list.length)]!

const requests = (): Array<Request> => {
  const r = rng(0xfa57)
  const out: Array<Request> = []
  for (let i = 0; i < 260; i++) {
    const roll = r()
    const auth: Request["auth"] = roll < 0.05 ? "none" : roll < 0.08 ? "bad" : roll < 0.12 ? "free" : "key"
    const kind = pick(r, ["anchor", "anchor", "encrypted", "hash", "batch", "bad", "media", "idem"] as const)
    const data = pick(r, VALUES)
    const meta = r() < 0.3 ? `,"metadata":${pick(r, ["{\"ref\":\"x\"}", "{\"nested\":{\"a\":[1]}}", "{}"])}` : ""
    const chain = r() < 0.2 ? `,"chain":"${pick(r, ["evm", "fabric", "hybrid"])}"` : ""
    const mode = r() < 0.2 ? `,"packageMode":"${pick(r, ["SEPARATED", "IN_PLACE", "MANAGED"])}"` : ""
    const collection = r() < 0.25
      ? `,"collection":${pick(r, ["\"invoices\"", "\"caf\u00e9 \"q\"\"", "\"\"", "\"a\u0000b\"", "7", "null", `"${"x".repeat(129)}"`])}`
      : ""
    switch (kind) {
      case "anchor":
        out.push({ path: "/v1/anchor", rawBody: `{"data":${data}${meta}${chain}${mode}${collection}}`, auth })
        break
      case "encrypted": {
        const key = r() < 0.8 ? "0123456789abcdef0123456789abcdef" : pick(r, ["short", "\u00e9".repeat(32)])
        // the hash scheme (issue 23): salted by default, unsalted on request, anything else refused
        const scheme = pick(r, ["", "", ",\"hashScheme\":\"jcs-sha256\"", ",\"hashScheme\":\"salted-jcs-sha256\"", ",\"hashScheme\":\"nope\"",
          ",\"hashScheme\":1"])
        out.push({ path: "/v1/anchor/encrypted", rawBody: `{"data":${data},"encryptionKey":${JSON.stringify(key)}${meta}${scheme}}`, auth })
        break
      }
      case "hash": {
        const hash = r() < 0.8 ? Array.from({ length: 64 }, () => "0123456789abcdefABCDEF"[Math.floor(r() * 22)]).join("") : "abc"
        out.push({ path: "/v1/anchor/hash", rawBody: `{"hash":"${hash}"${meta}${collection}}`, auth })
        break
      }
      case "batch": {
        const n = 1 + Math.floor(r() * 4)
        const items = Array.from({ length: n }, () =>
          r() < 0.75
            ? `{"data":${pick(r, VALUES)}}`
            : pick(r, ["{\"data\":[1]}", "{\"x\":1}", "7", "{\"data\":{},\"webhookUrl\":\"ftp://x\"}", "{\"data\":{},\"collection\":\"batch\"}",
              "{\"data\":{},\"collection\":\"\"}"]))
        out.push({ path: pick(r, ["/v1/anchor/batch", "/v1/anchor/batch/"]), rawBody: r() < 0.05 ? "{\"records\":[]}" : `{"records":[${items.join(",")}]}`,
          auth })
        break
      }
      case "bad":
        out.push({ path: "/v1/anchor", rawBody: pick(r, BAD_BODIES), auth })
        break
      case "media":
        out.push({ path: "/v1/anchor?x=1", rawBody: `{"data":${data}}`, contentType: pick(r, ["text/plain", null, "application/json; charset=utf-8"]), auth })
        break
      case "idem": {
        const key = pick(r, ["order-1", "order-2", "", "k".repeat(256)])
        out.push({ path: "/v1/anchor", rawBody: `{"data":${pick(r, ["{\"o\":1}", "{\"o\":2}", "{\"o\": 1}"])}}`, idempotencyKey: key, auth })
        break
      }
    }
  }
  return out
}

const mask = (text: string) =>
  saltedHash(text).replace(/\b[0-9a-f]{24}\b/g, "<id>").replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<time>")
    // a fresh random nonce per record
    .replace(/"(ciphertext|nonce|tag)":"[A-Za-z0-9+/=]*"/g, "\"$1\":\"<random>\"")
    // and a fresh random salt per salted record
    .replace(/"salt":"[A-Za-z0-9_-]{43}"/g, "\"salt\":\"<random>\"")

/** A salted record's hash commits to its random salt (only single encrypted records are salted: one view per answer). */
const saltedHash = (text: string) =>
  text.includes("\"hashScheme\":\"salted-jcs-sha256\"") ? text.replace(/"hash":"[0-9a-f]{64}"/g, "\"hash\":\"<salted>\"") : text

/** What a client sees of a response, with what differs between two nodes by nature (ids, times, counters) masked. */
const seen = (r: Awaited<ReturnType<typeof call>>) => ({
  status: r.status,
  body: mask(r.text),
  contentType: r.headers.get("content-type"),
  retryAfter: r.headers.get("retry-after") === null ? null : "present",
  replayed: r.headers.get("idempotent-replayed"),
  rateLimit: r.headers.get("x-ratelimit-limit"),
  rateHeaders: ["x-ratelimit-remaining", "x-ratelimit-reset"].map((h) => r.headers.get(h) !== null),
  quotaLimit: r.headers.get("x-quota-limit"),
  quotaHeaders: ["x-quota-remaining", "x-quota-reset"].map((h) => r.headers.get(h) !== null)
})

describe("the ingest fast path answers exactly as the HttpApi endpoints", () => {
  const nodes: Array<{ node: TestNode; key: string; free: string }> = []
  beforeAll(async () => {
    for (const ingestFastPath of [true, false]) {
      const node = await startNode({ config: { ingestFastPath, maxBodyBytes: 64 * 1024 } })
      const key = (await node.createKey(await node.createAccount({ plan: "ENTERPRISE" }))).key
      const freeAccount = await node.createAccount({ plan: "FREE" })
      const free = (await node.createKey(freeAccount)).key
      // One record left of the month's quota: the FREE requests reach QUOTA_EXCEEDED.
      await query(node.databaseUrl, "INSERT INTO usage_monthly (account_id, month, used) VALUES ($1, date_trunc('month', now())::date, 999)", [freeAccount])
      nodes.push({ node, key, free })
    }
  }, 120_000)
  afterAll(async () => {
    for (const n of nodes) await n.node.stop()
  })

  it("the same status, body and headers for 260 seeded requests (collections and 207 batches included)", async () => {
    let compared = 0
    for (const req of requests()) {
      const [fast, api] = await Promise.all(nodes.map(({ node, key, free }) => {
        const headers: Record<string, string> = {}
        if (req.contentType !== null) headers["content-type"] = req.contentType ?? "application/json"
        if (req.idempotencyKey !== undefined) headers["idempotency-key"] = req.idempotencyKey
        if (req.auth === "bad") headers.authorization = "Basic abc"
        const k = req.auth === "key" ? key : req.auth === "free" ? free : undefined
        return call(node.baseUrl, "POST", req.path, { ...(k ? { key: k } : {}), rawBody: req.rawBody ?? "", headers })
      }))
      expect(seen(fast), `${req.path} ${req.auth} ${req.rawBody}`).toEqual(seen(api))
      compared++
    }
    expect(compared).toBe(260)
    // Both nodes stored the same records.
    const counts = await Promise.all(nodes.map(({ node }) => query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM records")))
    expect(Number(counts[0][0].n)).toBeGreaterThan(50)
    expect(counts[0][0].n).toBe(counts[1][0].n)
  }, 120_000)
})
