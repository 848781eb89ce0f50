/**
 * decodeSubmission checks the common case by hand before falling back to the request schemas: it
 * must decide every body exactly as the schema alone does (same acceptance, same 400 message).
 */
import { describe, expect, it } from "vitest"
import { decodeWith } from "../../src/http/decode.ts"
import { decodeSubmission, type SubmissionKind } from "../../src/records/Ingest.ts"
import { AnchorBody, EncryptedAnchorBody, HashAnchorBody } from "../../src/api/recordSchemas.ts"

const SCHEMAS = { data: AnchorBody, encrypted: EncryptedAnchorBody, hash: HashAnchorBody } as const

const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const CANDIDATES: Record<string, ReadonlyArray<unknown>> = {
  data: [{ a: 1 }, {}, [], null, "x", 1, { __proto__: null, b: [1] }],
  hash: ["a".repeat(64), "A".repeat(64), "g".repeat(64), "a".repeat(63), 7, null],
  webhookUrl: ["https://example.com/h", "", 1, null],
  chain: ["evm", "fabric", "hybrid", "EVM", "bitcoin", null],
  packageMode: ["SEPARATED", "IN_PLACE", "MANAGED", "managed", 0],
  metadata: [{ ref: "x" }, {}, [], "m", null, { ref: "a\u0000b" }, { "k\u0000": 1 }, { deep: [{ x: "\u0000" }] }],
  encryptionKey: ["k".repeat(32), "short", 32, null],
  extra: [1, "x"],
  ["__proto__"]: [{ polluted: true }] // computed: an own member, not the literal's prototype
}

/** The schema alone: the value, or the 400 it makes (VALIDATION_ERROR with the message naming the field). */
const bySchema = (kind: SubmissionKind, body: unknown) => {
  const decoded = decodeWith(SCHEMAS[kind] as typeof AnchorBody, body)
  return decoded.ok
    ? { ok: true as const, value: decoded.value }
    : { ok: false as const, error: { errorCode: "VALIDATION_ERROR", error: decoded.message } }
}

describe("decodeSubmission", () => {
  it("decides 6,000 random bodies of each kind exactly as the schema alone", () => {
    const r = rng(0xb0d1)
    const names = Object.keys(CANDIDATES)
    let accepted = 0
    let refused = 0
    for (let i = 0; i < 6000; i++) {
      const kind = (["data", "encrypted", "hash"] as const)[i % 3]
      const body: Record<string, unknown> = {}
      for (const name of names) {
        const pool = CANDIDATES[name]!
        // required members present most of the time, the others now and then
        const required = kind === "hash" ? name === "hash" : name === "data" || (kind === "encrypted" && name === "encryptionKey")
        const wanted = required ? 0.9 : name === "extra" || name === "__proto__" ? 0.08 : 0.3
        if (r() < wanted) {
          Object.defineProperty(body, name, { value: pool[Math.floor(r() * pool.length)], enumerable: true, writable: true, configurable: true })
        }
      }
      const mine = decodeSubmission(kind, body)
      const reference = bySchema(kind, body)
      if (reference.ok) {
        expect(mine._tag, JSON.stringify(body)).toBe("Valid")
        if (mine._tag === "Valid") expect(mine.submission).toEqual({ _tag: kind, body: reference.value })
        accepted++
      } else {
        expect(mine._tag, JSON.stringify(body)).toBe("Invalid")
        // The same 400 as the schema alone: code and message (the domain error says what the wire body will).
        if (mine._tag === "Invalid") {
          const wire = reference.error as { errorCode: string; error: string }
          expect({ errorCode: mine.error.errorCode, error: mine.error.message }).toEqual({ errorCode: wire.errorCode, error: wire.error })
        }
        refused++
      }
    }
    expect(accepted).toBeGreaterThan(300)
    expect(refused).toBeGreaterThan(300)
  })

  it("names the offending member with the batch position", () => {
    const invalid = decodeSubmission("data", { data: { a: 1 }, chain: "bitcoin" }, "records[3].")
    expect(invalid._tag).toBe("Invalid")
    if (invalid._tag === "Invalid") {
      expect(invalid.error.errorCode).toBe("VALIDATION_ERROR")
      expect(invalid.error.message).toContain("records[3].chain")
    }
  })
})
