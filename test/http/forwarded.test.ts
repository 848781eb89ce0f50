/**
 * TRUST_PROXY (issue 23, finding 9): the client is the right-most X-Forwarded-For address the trusted
 * proxies do not vouch for, never the leftmost entry the client wrote itself. The setting's forms
 * (off, a hop count, proxies' addresses and CIDR ranges) and their refusals; the selection over
 * ports, IPv6, mapped addresses and garbage entries; X-Forwarded-Proto only from a trusted peer; and a
 * node whose per-address limit a spoofed leftmost entry no longer escapes (both forms).
 *   npx vitest run test/http/forwarded.test.ts
 */
import { ConfigProvider, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AppConfig, parseTrustProxy, type TrustProxy } from "../../src/config.ts"
import { forwardedClient, forwardedHttps } from "../../src/http/forwarded.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

const trust = (text: string): TrustProxy => {
  const parsed = parseTrustProxy(text)
  if (typeof parsed === "string") throw new Error(parsed)
  return parsed
}

describe("TRUST_PROXY: the setting", () => {
  it("off, hop counts (true = 1), addresses and CIDR ranges (IPv4, IPv6, mapped)", () => {
    for (const off of ["", "false", "FALSE", "0", "no", "off"]) expect(parseTrustProxy(off)).toEqual({ _tag: "Off" })
    for (const one of ["true", "1", "yes", " on "]) expect(parseTrustProxy(one)).toEqual({ _tag: "Hops", hops: 1 })
    expect(parseTrustProxy("3")).toEqual({ _tag: "Hops", hops: 3 })
    const ranges = trust("10.0.0.0/8, 127.0.0.1,2001:db8::/32,::ffff:192.168.0.0/112")
    expect(ranges._tag).toBe("Ranges")
    const spelled = (ranges as Extract<TrustProxy, { _tag: "Ranges" }>).ranges.map(([ip, bits]) => `${ip.toString()}/${bits}`)
    expect(spelled).toEqual(["10.0.0.0/8", "127.0.0.1/32", "2001:db8::/32", "192.168.0.0/16"])
  })

  it("anything else is refused with a message naming the value and the forms (start refuses, nothing guessed)", () => {
    for (const bad of ["10.0.0.0/33", "10.0.0.0/8,", "proxy.internal", "0x7f.1", "2130706433.1", "10.0.0.1/8/8", "::1/129", "-1", "1.5"]) {
      const message = parseTrustProxy(bad)
      expect(typeof message, bad).toBe("string")
      expect(message).toMatch(/^TRUST_PROXY: .* Expected off \(false\), a hop count/)
    }
    expect(parseTrustProxy("33")).toMatch(/hop count from 0 to 32/)
    // The refusal quotes a short excerpt of a long value.
    expect((parseTrustProxy("x".repeat(10_000)) as string).length).toBeLessThan(400)
  })

  it("AppConfig fails to load with that message", async () => {
    const exit = await Effect.runPromiseExit(AppConfig.config.parse(ConfigProvider.fromUnknown({ TRUST_PROXY: "10.0.0.0/33" })))
    expect(exit._tag).toBe("Failure")
    expect(String(exit._tag === "Failure" ? exit.cause.reasons[0] : "")).toMatch(/TRUST_PROXY: "10\.0\.0\.0\/33" is not an IP address or CIDR range/)
    const ok = await Effect.runPromise(AppConfig.config.parse(ConfigProvider.fromUnknown({ TRUST_PROXY: "true" })))
    expect(ok.trustProxy).toEqual({ _tag: "Hops", hops: 1 })
  })
})

describe("TRUST_PROXY: which address is the client's", () => {
  it("off: the connection's address, whatever the header says", () => {
    expect(forwardedClient("127.0.0.1", "6.6.6.6", trust("false"))).toBe("127.0.0.1")
    expect(forwardedClient(undefined, "6.6.6.6", trust("1"))).toBe("unknown")
  })

  it("hops: the entry that many steps from the right; a spoofed leftmost entry is never read", () => {
    // One proxy (127.0.0.1) appended 203.0.113.7; the client wrote the rest.
    expect(forwardedClient("127.0.0.1", "6.6.6.6, 203.0.113.7", trust("1"))).toBe("203.0.113.7")
    expect(forwardedClient("127.0.0.1", "203.0.113.7", trust("1"))).toBe("203.0.113.7")
    expect(forwardedClient("127.0.0.1", "1.1.1.1, 6.6.6.6, 198.51.100.2, 203.0.113.7", trust("2"))).toBe("198.51.100.2")
    // No header (the proxy did not append): the proxy itself.
    expect(forwardedClient("127.0.0.1", undefined, trust("1"))).toBe("127.0.0.1")
    // Fewer entries than hops: the leftmost there is.
    expect(forwardedClient("127.0.0.1", "203.0.113.7", trust("3"))).toBe("203.0.113.7")
    // Several headers arrive joined by commas (Node does that): the same rule.
    expect(forwardedClient("::ffff:127.0.0.1", "6.6.6.6,203.0.113.7", trust("1"))).toBe("203.0.113.7")
  })

  it("ranges: the right-most address that is not a trusted proxy, connection included", () => {
    const proxies = trust("127.0.0.0/8,10.0.0.0/8")
    expect(forwardedClient("127.0.0.1", "6.6.6.6, 203.0.113.7", proxies)).toBe("203.0.113.7")
    // Two trusted proxies in a row are stepped over.
    expect(forwardedClient("127.0.0.1", "6.6.6.6, 203.0.113.7, 10.1.2.3", proxies)).toBe("203.0.113.7")
    // A peer that is no trusted proxy: its own address, the header ignored.
    expect(forwardedClient("198.51.100.9", "127.0.0.1, 10.0.0.1", proxies)).toBe("198.51.100.9")
    // Every entry trusted: the leftmost.
    expect(forwardedClient("127.0.0.1", "10.0.0.5, 10.0.0.6", proxies)).toBe("10.0.0.5")
    // IPv6 peers and entries, and a mapped peer matched as IPv4.
    expect(forwardedClient("::1", "2001:db8::1", trust("::1"))).toBe("2001:db8::1")
    expect(forwardedClient("::ffff:10.0.0.2", "6.6.6.6, 2001:db8::7", proxies)).toBe("2001:db8::7")
  })

  it("ports, brackets and mapped spellings are read as addresses; garbage stops at the proxy that wrote it", () => {
    const one = trust("1")
    expect(forwardedClient("127.0.0.1", "203.0.113.7:4711", one)).toBe("203.0.113.7")
    expect(forwardedClient("127.0.0.1", "[2001:db8::1]:4711", one)).toBe("2001:db8::1")
    expect(forwardedClient("127.0.0.1", "[2001:db8::1]", one)).toBe("2001:db8::1")
    expect(forwardedClient("127.0.0.1", "::ffff:203.0.113.7", one)).toBe("203.0.113.7")
    // Not an address: the proxy that put it there is counted, never the text, never what lies left of it.
    for (const garbage of ["unknown", "", "evil.example", "0x7f.1", "2130706433", "1.2.3.4.5", "x".repeat(5000), "<script>"]) {
      expect(forwardedClient("127.0.0.1", `6.6.6.6, ${garbage}`, one), garbage).toBe("127.0.0.1")
      expect(forwardedClient("127.0.0.1", `6.6.6.6, ${garbage}, 10.0.0.1`, trust("127.0.0.1,10.0.0.0/8")), garbage).toBe("10.0.0.1")
    }
    expect(forwardedClient("127.0.0.1", ",,,", one)).toBe("127.0.0.1")
  })

  it("X-Forwarded-Proto: only from a trusted peer, its right-most entry", () => {
    expect(forwardedHttps("127.0.0.1", "https", trust("false"))).toBe(false)
    expect(forwardedHttps("127.0.0.1", "https", trust("1"))).toBe(true)
    expect(forwardedHttps("127.0.0.1", "HTTPS", trust("127.0.0.1"))).toBe(true)
    expect(forwardedHttps("198.51.100.9", "https", trust("127.0.0.1"))).toBe(false)
    // The client's own leftmost claim is not the proxy's answer.
    expect(forwardedHttps("127.0.0.1", "https, http", trust("1"))).toBe(false)
    expect(forwardedHttps("127.0.0.1", "http, https", trust("1"))).toBe(true)
    expect(forwardedHttps("127.0.0.1", undefined, trust("1"))).toBe(false)
  })
})

type Response = Awaited<ReturnType<typeof call>>

/**
 * `count` anonymous requests, each with another spoofed leftmost X-Forwarded-For entry before
 * `appended` (what the proxy in front added). Per window (X-RateLimit-Reset) at most `limit` pass.
 */
const spoofedBurst = (node: TestNode, count: number, appended: string): Promise<Array<Response>> =>
  Promise.all(
    Array.from({ length: count }, (_, i) => call(node.baseUrl, "GET", "/v1/records", { headers: { "x-forwarded-for": `6.6.${i}.${i}, ${appended}` } }))
  )

const expectHeldToLimit = (results: Array<Response>, limit: number) => {
  const passed = new Map<string, number>()
  for (const r of results) {
    expect([401, 429]).toContain(r.status)
    if (r.status === 401) passed.set(r.headers.get("x-ratelimit-reset")!, (passed.get(r.headers.get("x-ratelimit-reset")!) ?? 0) + 1)
  }
  // A burst may straddle a one-second window: still at most `limit` in each.
  for (const [, n] of passed) expect(n).toBeLessThanOrEqual(limit)
  expect(results.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(results.length - 2 * limit)
}

describe.each([
  ["a hop count", "1"],
  ["the proxies' range", "127.0.0.0/8"]
])("a node behind one proxy (TRUST_PROXY as %s)", (_, setting) => {
  const LIMIT = 3
  let node: TestNode
  beforeAll(async () => {
    node = await startNode({ config: { anonymousRatePerSecond: LIMIT, trustProxy: trust(setting) } })
  })
  afterAll(() => node?.stop())

  it("a spoofed leftmost X-Forwarded-For entry does not give a client a fresh per-address budget", async () => {
    expectHeldToLimit(await spoofedBurst(node, 10, "203.0.113.7"), LIMIT)
  })

  it("the address the proxy appended is what counts: another client has its own budget", async () => {
    const results = await spoofedBurst(node, 10, "203.0.113.8")
    expectHeldToLimit(results, LIMIT)
    expect(results.some((r) => r.status === 401)).toBe(true)
  })
})
