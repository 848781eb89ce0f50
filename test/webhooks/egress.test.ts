/**
 * The egress policy's pieces without a node (src/webhooks/urlPolicy.ts): the address classifier
 * (ipaddr.js plus the global-unicast rule for IPv6), WEBHOOK_ALLOW_PRIVATE's parsing and what it
 * opens, and the layer that refuses to start on a value it cannot parse. Nothing here resolves a
 * name through DNS or opens a connection. (The whole path through a node: ./ssrf.test.ts.)
 */
import { describe, expect, it } from "vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { AllowPrivateDefault, checkWebhookUrl, classifyAddress, describeAllowlist, parseAllowlist, type Resolve,
  WebhookEgress } from "../../src/webhooks/urlPolicy.ts"

const allowlist = (raw: string) => {
  const parsed = parseAllowlist(raw)
  if (!parsed.ok) throw new Error(parsed.message)
  return parsed.allowlist
}

/** Stand-in DNS: the test's names only. */
const resolve: Resolve = async (hostname) => {
  const table: Record<string, Array<string>> = {
    "hooks.corp.example": ["10.20.30.40"],
    "a.svc.cluster.local": ["10.0.0.7"],
    "mixed.example": ["93.184.216.34", "192.168.0.1"],
    "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "zero.example": ["0.0.0.0"]
  }
  const found = table[hostname]
  if (found === undefined) throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" })
  return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))
}

describe("classifyAddress", () => {
  it("public unicast only; every special range by its ipaddr.js name", () => {
    const cases: Record<string, string> = {
      "93.184.216.34": "public",
      "8.8.8.8": "public",
      "2606:4700::1111": "public",
      "2a00:1450:4001:80b::200e": "public",
      "127.0.0.1": "loopback",
      "127.255.255.254": "loopback",
      "::1": "loopback",
      "10.1.2.3": "private",
      "172.16.0.1": "private",
      "192.168.1.1": "private",
      "fd00::2": "uniqueLocal",
      "169.254.169.254": "linkLocal",
      "fe80::1": "linkLocal",
      "100.64.0.1": "carrierGradeNat",
      "0.0.0.0": "unspecified",
      "::": "unspecified",
      "255.255.255.255": "broadcast",
      "224.0.0.1": "multicast",
      "ff02::1": "multicast",
      "192.0.2.1": "reserved",
      "198.51.100.1": "reserved",
      "203.0.113.1": "reserved",
      "192.88.99.1": "reserved",
      "240.0.0.1": "reserved",
      "2001:db8::1": "reserved",
      "198.18.0.1": "reserved",
      "2001:2::1": "benchmarking",
      "::ffff:127.0.0.1": "ipv4Mapped",
      "::ffff:8.8.8.8": "ipv4Mapped",
      "::ffff:0:7f00:1": "rfc6145",
      "64:ff9b::7f00:1": "rfc6052",
      "64:ff9b:1::7f00:1": "rfc6052",
      "2002:7f00:1::1": "6to4",
      "2001::1": "teredo",
      // IPv4-compatible (::a.b.c.d) and the rest of ::/8: "unicast" to ipaddr.js, outside 2000::/3.
      "::127.0.0.1": "non-global",
      "::7f00:1": "non-global",
      "::8.8.8.8": "non-global",
      "1::1": "non-global",
      "not-an-address": "invalid",
      "0x7f.1": "invalid",
      "2130706433": "invalid"
    }
    const got = Object.fromEntries(Object.keys(cases).map((a) => [a, classifyAddress(a)]))
    expect(got).toEqual(cases)
  })

  it("the URL parser turns numeric IPv4 spellings into the dotted address the policy classifies", async () => {
    for (const spelling of ["2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.1", "%31%32%37.0.0.1"]) {
      expect(new URL(`http://${spelling}:8080/h`).hostname).toBe("127.0.0.1")
      expect(await checkWebhookUrl(`http://${spelling}:8080/h`, "test", { resolve })).toEqual({
        ok: false,
        reason: "webhookUrl host 127.0.0.1 is not a public address (loopback)"
      })
    }
  })
})

describe("WEBHOOK_ALLOW_PRIVATE", () => {
  it("parses CIDRs, addresses, names, *.domain and `loopback`; empty or `none` opens nothing", () => {
    expect(allowlist("").entries).toEqual([])
    expect(allowlist(" none ").entries).toEqual([])
    expect(allowlist("loopback").entries).toEqual(["127.0.0.0/8", "::1", "localhost"])
    expect(allowlist(" 10.0.0.0/8, fd00::/8 ,hooks.corp.example,*.svc.cluster.local,[::1],::ffff:10.1.2.3,HOOKS.CORP.EXAMPLE.,").entries)
      .toEqual(["10.0.0.0/8", "fd00::/8", "hooks.corp.example", "*.svc.cluster.local", "::1", "10.1.2.3"])
    expect(describeAllowlist(allowlist(""))).toBe("public addresses only")
    expect(describeAllowlist(allowlist("loopback"))).toBe("public addresses and 127.0.0.0/8, ::1, localhost")
  })

  it("refuses what it cannot read, naming the entry (bounded)", () => {
    for (const bad of ["10.0.0.0/33", "10.0.0/8", "fd00::/129", "10.0.0.0/x", "foo bar", "10.1.2", "http://x", "*.", "*", "a..b", "none,10.0.0.1"]) {
      const parsed = parseAllowlist(bad)
      expect(parsed.ok, bad).toBe(false)
      if (!parsed.ok) expect(parsed.message).toContain(bad.includes(",") ? `"none"` : `"${bad}"`)
    }
    const long = parseAllowlist(`${"x".repeat(500)}!`)
    expect(!long.ok && long.message.length).toBeLessThan(200)
  })

  it("opens the same targets whatever the key: addresses in its networks, names it lists and what they resolve to", async () => {
    const list = allowlist("10.0.0.0/8,127.0.0.1,hooks.corp.example,*.svc.cluster.local")
    const check = (url: string, environment: "test" | "live" = "test") => checkWebhookUrl(url, environment, { resolve, allowlist: list })
    for (const env of ["test", "live"] as const) {
      const scheme = env === "live" ? "https" : "http"
      for (const url of [`${scheme}://10.1.2.3/h`, `${scheme}://127.0.0.1:9/h`, `${scheme}://2130706433:9/h`, `${scheme}://[::ffff:127.0.0.1]:9/h`,
        `${scheme}://[::ffff:10.9.9.9]/h`, `${scheme}://hooks.corp.example/h`, `${scheme}://a.svc.cluster.local/h`, `${scheme}://public.example/h`])
      {
        expect(await check(url, env), url).toEqual({ ok: true })
      }
      for (const url of [`${scheme}://127.0.0.2/h`, `${scheme}://192.168.1.1/h`, `${scheme}://169.254.169.254/h`, `${scheme}://localhost/h`,
        `${scheme}://0.0.0.0/h`, `${scheme}://mixed.example/h`, `${scheme}://zero.example/h`, `${scheme}://[::127.0.0.1]/h`, `${scheme}://nowhere.example/h`,
        `${scheme}://metadata.google.internal/h`])
      {
        expect((await check(url, env)).ok, url).toBe(false)
      }
    }
    // A metadata name is opened only by itself, not by a wildcard over its domain.
    const internal = allowlist("*.internal")
    expect(await checkWebhookUrl("http://hooks.corp.internal/h", "test", { resolve, allowlist: internal })).toEqual({ ok: true })
    expect((await checkWebhookUrl("http://metadata.google.internal/h", "test", { resolve, allowlist: internal })).ok).toBe(false)
    // 0.0.0.0, broadcast and multicast are never opened, not even by a network that holds them.
    const all = allowlist("0.0.0.0/0,::/0")
    expect((await checkWebhookUrl("http://10.1.2.3/h", "test", { resolve, allowlist: all })).ok).toBe(true)
    for (const url of ["http://0.0.0.0/h", "http://255.255.255.255/h", "http://224.0.0.1/h", "http://[::]/h", "http://[ff02::1]/h",
      "http://[::ffff:0.0.0.0]/h"])
    {
      expect((await checkWebhookUrl(url, "test", { resolve, allowlist: all })).ok, url).toBe(false)
    }
  })

  it("the set-time lookup is bounded: a resolver that never answers gives a clear refusal, not a hung request", async () => {
    const never: Resolve = () => new Promise(() => {})
    const started = performance.now()
    expect(await checkWebhookUrl("http://hangs.test/h", "test", { resolve: never, resolveTimeoutMillis: 200 })).toEqual({
      ok: false,
      reason: "webhookUrl host hangs.test did not resolve in time"
    })
    expect(performance.now() - started).toBeLessThan(5_000)
  }, 10_000)

  const build = (env: Record<string, string>, fallback?: string) =>
    Effect.runPromiseExit(Effect.gen(function*() {
      return (yield* WebhookEgress).allowlist.entries
    }).pipe(
      Effect.provide(WebhookEgress.layer),
      Effect.provide(Layer.succeed(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))),
      fallback === undefined ? (e) => e : Effect.provide(Layer.succeed(AllowPrivateDefault, fallback))
    ))

  it("the node reads it once at start: unset is the command's default (nothing; loopback for `anchord dev`), a bad value stops the start", async () => {
    expect(await build({})).toEqual(Exit.succeed([]))
    expect(await build({}, "loopback")).toEqual(Exit.succeed(["127.0.0.0/8", "::1", "localhost"]))
    expect(await build({ WEBHOOK_ALLOW_PRIVATE: "none" }, "loopback")).toEqual(Exit.succeed([]))
    expect(await build({ WEBHOOK_ALLOW_PRIVATE: "10.0.0.0/8" }, "loopback")).toEqual(Exit.succeed(["10.0.0.0/8"]))
    const bad = await build({ WEBHOOK_ALLOW_PRIVATE: "10.0.0.0/99" })
    expect(Exit.isFailure(bad)).toBe(true)
    expect(String(Exit.isFailure(bad) && bad.cause.reasons.map((r) => r._tag === "Fail" ? (r.error as Error).message : "")))
      .toBe(`WEBHOOK_ALLOW_PRIVATE: "10.0.0.0/99" is not a CIDR (address/prefix, e.g. 10.0.0.0/8 or fd00::/8)`)
  })
})
