/** The 202 view written out directly must be the same text as the general view of the same row. */
import { describe, expect, it } from "vitest"
import { acceptedView, viewOf } from "../../src/records/creation.ts"
import type { NewRecord } from "../../src/records/insertRecords.ts"

const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

describe("acceptedView", () => {
  it("equals the view through toView on 3,000 random rows (metadata, URLs, collections and network ids that need escaping included)", () => {
    const r = rng(0x5eed)
    const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(r() * xs.length)]!
    const hex = (n: number) => Array.from({ length: n }, () => "0123456789abcdef"[Math.floor(r() * 16)]).join("")
    const strings = ["", "plain", "quote \" and \\ backslash", "é€😀", "\u2028\u0000\u001f", "</script>"]
    let n = 0
    for (let i = 0; i < 3000; i++) {
      const source = pick(["data", "hash", "encrypted"] as const)
      const created = new Date(Math.floor(r() * 4e12))
      const row: NewRecord = {
        id: hex(24),
        accountId: `acct_${hex(16)}`,
        environment: pick(["test", "live"] as const),
        hash: hex(64),
        chainType: pick(["evm", "fabric", "hybrid"] as const),
        networkId: pick(["hardhat-local", "fabric-dev", ...strings]),
        packageMode: pick(["SEPARATED", "IN_PLACE", "MANAGED"] as const),
        source,
        dataJcs: source === "data" && r() < 0.8 ? JSON.stringify({ k: pick(strings), n: r() }) : null,
        ciphertext: source === "encrypted" && r() < 0.5 ? new Uint8Array([1, 2, 3]) : null,
        nonce: source === "encrypted" ? new Uint8Array(12) : null,
        authTag: source === "encrypted" ? new Uint8Array(16) : null,
        metadata: r() < 0.5 ? {} : { [pick(strings)]: pick(strings), nested: { list: [1, pick(strings)] } },
        webhookUrl: r() < 0.5 ? null : `https://example.com/${pick(strings)}`,
        collection: r() < 0.5 ? null : pick(["invoices", "é€😀", "quote \" and \\ backslash", "</script>", "\u2028"]),
        createdAt: created,
        updatedAt: r() < 0.8 ? created : new Date(created.getTime() + 1),
        salted: source === "encrypted" && r() < 0.5,
        ...(source === "encrypted" && r() < 0.5 ? { salt: hex(43) } : {})
      }
      expect(acceptedView(row), JSON.stringify(row)).toBe(viewOf(row))
      JSON.parse(acceptedView(row))
      n++
    }
    expect(n).toBe(3000)
  })
})
