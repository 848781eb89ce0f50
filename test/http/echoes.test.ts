/**
 * Bounded echoes (issue 23, finding 10): an error message quotes at most a short excerpt of what the
 * client sent (src/excerpt.ts: 64 characters, then "…" and the full length), so a 500 KB number,
 * member name or string gives a clear error whose body stays under 2 KB, on every path that quotes
 * input: the strict JSON parser (numbers, duplicate and deep member names), the schema messages
 * (unknown members), PATCH's immutable fields, the verify endpoint's bundle checks, unknown routes.
 *   npx vitest run test/http/echoes.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseStrictJson } from "../../src/canonical/strictJson.ts"
import { EXCERPT_MAX, excerpt, quoted } from "../../src/excerpt.ts"
import { expectError } from "../support/expect.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

const BIG = 500_000
const SMALL = 2048

describe("the excerpt helper", () => {
  it("keeps short text, cuts long text at EXCERPT_MAX with its length, never inside a surrogate pair", () => {
    expect(excerpt("short")).toBe("short")
    expect(excerpt("x".repeat(EXCERPT_MAX))).toBe("x".repeat(EXCERPT_MAX))
    expect(excerpt("x".repeat(BIG))).toBe(`${"x".repeat(EXCERPT_MAX)}… (${BIG} characters)`)
    const emoji = `${"x".repeat(EXCERPT_MAX - 1)}😀😀`
    expect(excerpt(emoji)).toBe(`${"x".repeat(EXCERPT_MAX - 1)}… (${emoji.length} characters)`)
    expect(quoted("a\"b")).toBe(`"a\\"b"`)
    expect(quoted("\n".repeat(BIG))).toBe(`"${"\\n".repeat(EXCERPT_MAX)}"… (${BIG} characters)`)
  })

  it("the parser's messages and paths stay short for huge numbers and member names, at any depth", () => {
    const message = (text: string) => {
      try {
        parseStrictJson(text)
      } catch (e) {
        return (e as Error).message
      }
      throw new Error("parsed")
    }
    expect(message(`{"n":${"9".repeat(BIG)}}`)).toMatch(/^integer 9{64}… \(500000 characters\) is outside the safe range/)
    expect(message(`[1e${"9".repeat(BIG)}]`).length).toBeLessThan(300)
    const key = "k".repeat(5_000)
    // 60 levels of 5,000-character member names, then a bad escape: the path keeps its two ends.
    const deep = `${`{"${key}":`.repeat(60)}"\\q"${"}".repeat(60)}`
    expect(message(deep).length).toBeLessThan(700)
    expect(message(`{"${key}":1,"${key}":2}`).length).toBeLessThan(500)
  })
})

describe("error bodies over HTTP stay small", () => {
  let node: TestNode
  let key = ""
  beforeAll(async () => {
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  })
  afterAll(() => node?.stop())

  const send = (method: string, path: string, rawBody?: string) =>
    call(node.baseUrl, method, path, { key, rawBody, headers: rawBody === undefined ? {} : { "content-type": "application/json" } })

  const expectSmall = (r: Awaited<ReturnType<typeof call>>, status: number, code: string, message: RegExp) => {
    expectError(r, status, code, message)
    expect(r.text.length).toBeLessThan(SMALL)
  }

  it("a 500 KB number: 400 naming an excerpt of it and its length", async () => {
    expectSmall(await send("POST", "/v1/anchor", `{"data":{"n":${"9".repeat(BIG)}}}`), 400, "VALIDATION_ERROR",
      /^Request body rejected: integer 9{64}… \(500000 characters\) is outside the safe range .* at \$\.data\.n/)
    expectSmall(await send("POST", "/v1/anchor", `{"data":{"n":1.${"5".repeat(BIG)}e999}}`), 400, "VALIDATION_ERROR",
      /^Request body rejected: number 1\.5{62}… \(500006 characters\) overflows to Infinity/)
  })

  it("a huge unknown member name (top level, and on PATCH), a huge duplicated one, a huge one on a bad escape", async () => {
    const name = "x".repeat(BIG)
    expectSmall(await send("POST", "/v1/anchor", `{"data":{},"${name}":1}`), 400, "VALIDATION_ERROR",
      /^x{64}… \(500000 characters\): Expected no excess property$/)
    expectSmall(await send("POST", "/v1/anchor", `{"data":{"${name}":1,"${name}":2}}`), 400, "VALIDATION_ERROR",
      /^Request body rejected: duplicate object member name "x{64}"… \(500000 characters\)/)
    expectSmall(await send("POST", "/v1/anchor", `{"data":{"${name}":"\\q"}}`), 400, "INVALID_JSON",
      /^Request body is not valid JSON: invalid escape sequence .* at \$\.data\["x{64}"… \(500000 characters\)\]/)
    const created = await send("POST", "/v1/anchor", `{"data":{"a":1}}`)
    expect(created.status).toBe(202)
    const id = created.json.data.recordId
    expectSmall(await send("PATCH", `/v1/records/${id}`, `{"${name}":1}`), 422, "IMMUTABLE_FIELD", /^Field x{64}… \(500000 characters\) cannot be changed/)
    // Many names: five of them, and how many more.
    const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`field${i}`, 1]))
    expectSmall(await send("PATCH", `/v1/records/${id}`, JSON.stringify(many)), 422, "IMMUTABLE_FIELD",
      /^Fields field0, field1, field2, field3, field4 and 19995 more cannot be changed/)
  })

  it("a 500 KB string in a checked field of a proof bundle (POST /v1/verify)", async () => {
    const r = await send("POST", "/v1/verify",
      JSON.stringify({ hash: "a".repeat(64), bundle: { version: "v".repeat(BIG), hash: "a".repeat(64), anchors: [] } }))
    expectSmall(r, 400, "VALIDATION_ERROR", /^bundle: version: "v{63}… \(500002 characters\) is not a supported proof bundle version/)
  })

  it("a huge query parameter and a huge unknown path", async () => {
    const value = "x".repeat(12_000)
    expectSmall(await send("GET", `/v1/records?status=${value}`), 400, "VALIDATION_ERROR", /^Invalid request query: status: Expected/)
    expectSmall(await send("GET", `/v1/records?limit=${"9".repeat(12_000)}`), 400, "VALIDATION_ERROR", /^Invalid request query: limit: Expected/)
    expectSmall(await send("GET", `/v1/${value}`), 404, "NOT_FOUND", /^No route GET \/v1\/x{60}… \(12004 characters\)$/)
  })
})
