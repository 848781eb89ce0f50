/**
 * The webhook egress policy (docs/webhooks.md, "Egress policy"; issue 23 findings 1 and 10): the same
 * rules for test and live keys, at set time (POST / PATCH `webhookUrl`, PUT /v1/webhooks `url`, the
 * console's webhook) and again at connect time, on the address actually connected to, so a name that
 * resolves elsewhere later (DNS rebinding) is refused; WEBHOOK_ALLOW_PRIVATE opens what an operator needs.
 *
 * No test here connects anywhere but loopback, even against a broken policy: DNS is stood in for by
 * the node's WebhookResolver (names resolve to 127.0.0.1 or to a public address never connected to),
 * the set-time node runs no dispatcher (an accepted internal URL would never be tried), and the
 * connect-time rows point at the test's own listener through loopback spellings.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { ConsoleUsers } from "../../src/console/Users.ts"
import { hashPassword } from "../../src/console/passwords.ts"
import { query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call } from "../support/node.ts"
import { deliveryRow, type Receiver, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"
import type { Resolve } from "../../src/webhooks/urlPolicy.ts"

const standIn = (lookups: Array<string>): Resolve => async (hostname) => {
  lookups.push(hostname)
  // "intranet.test" plays a hosts-file name of an internal machine; rebind.test a name that changed.
  if (["rebind.test", "intranet.test", "localhost"].includes(hostname)) return [{ address: "127.0.0.1", family: 4 }]
  if (hostname === "public.test") return [{ address: "93.184.216.34", family: 4 }]
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
}

/** Host (and path) spellings of internal targets: every one refused, with a test key and with a live key. */
const INTERNAL = [
  "169.254.169.254/latest/meta-data/",
  "10.1.2.3:8080/h",
  "192.168.1.1/h",
  "[fd00::2]/h",
  "metadata.google.internal/computeMetadata/v1/",
  "2130706433:8080/h",
  "[::ffff:127.0.0.1]/h",
  "0.0.0.0/h",
  "0x7f.1/h",
  "localhost/h",
  "LOCALHOST./h",
  "app.localhost/h",
  "intranet.test/h",
  "[::127.0.0.1]/h",
  "[2002:7f00:1::1]/h",
  "[::ffff:0:7f00:1]/h",
  "[64:ff9b::7f00:1]/h",
  "[64:ff9b:1::7f00:1]/h",
  "[2001::1]/h",
  "192.0.2.1/h",
  "198.51.100.1/h",
  "203.0.113.1/h",
  "192.88.99.1/h",
  "[2001:db8::1]/h",
  "100.64.0.1/h",
  "172.16.0.1/h",
  "127.0.0.1/h",
  "[::1]/h",
  "[fe80::1]/h",
  "224.0.0.1/h",
  "255.255.255.255/h",
  "198.18.0.1/h"
]

/** Signs a console admin of `accountId` in; the fetch options of their state changes. */
const consoleAdmin = async (node: WebhookNode, accountId: string) => {
  const email = `admin-${accountId}@example.com`
  const passwordHash = await hashPassword("a fine passphrase")
  await node.runtime.runPromise(Effect.flatMap(ConsoleUsers, (users) => users.create({ email, passwordHash, operator: false, accountId, role: "admin" })))
  const signIn = await call(node.baseUrl, "POST", "/console/api/session", { body: { email, password: "a fine passphrase" }, headers: { origin: node.baseUrl } })
  expect(signIn.status).toBe(200)
  const cookie = signIn.headers.getSetCookie().map((c) => c.split(";")[0]!).find((c) => c.startsWith("anchord_session="))!
  return { cookie, "x-csrf-token": signIn.json.data.csrfToken, origin: node.baseUrl }
}

describe("webhook egress policy at set time (test and live keys alike)", () => {
  let node: WebhookNode
  let account: string
  const keys: Record<"test" | "live", string> = { test: "", live: "" }
  const records: Record<"test" | "live", string> = { test: "", live: "" }
  const lookups: Array<string> = []

  beforeAll(async () => {
    // No dispatcher: were the policy broken, an accepted internal URL would still never be tried.
    node = await startWebhookNode({ env: { WEBHOOK_DISPATCHER: "false", WEBHOOK_ALLOW_PRIVATE: "none" }, resolve: standIn(lookups) })
    account = await node.createAccount()
    for (const env of ["test", "live"] as const) {
      keys[env] = await node.createKey(account, env)
      records[env] = (await call(node.baseUrl, "POST", "/v1/anchor", { key: keys[env], body: { data: { env } } })).json.data.recordId
    }
  })
  afterAll(async () => {
    await node?.stop()
  })

  for (const env of ["test", "live"] as const) {
    it(`${env} key: every internal spelling is refused on POST, PATCH and PUT /v1/webhooks (400 INVALID_WEBHOOK_URL)`, async () => {
      const key = keys[env]
      const scheme = env === "live" ? "https" : "http"
      const accepted: Array<string> = []
      for (const form of INTERNAL) {
        const url = `${scheme}://${form}`
        const batch = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key, body: { records: [{ data: { x: 2 }, webhookUrl: url }] } })
        if (batch.status !== 207 || batch.json.data.results[0].errorCode !== "INVALID_WEBHOOK_URL") accepted.push(`${url} → batch ${batch.status}`)
        for (const r of [
          await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { x: 1 }, webhookUrl: url } }),
          await call(node.baseUrl, "PATCH", `/v1/records/${records[env]}`, { key, body: { webhookUrl: url } }),
          await call(node.baseUrl, "PUT", "/v1/webhooks", { key, body: { url, enabled: true } })
        ]) {
          if (r.status !== 400 || r.json?.errorCode !== "INVALID_WEBHOOK_URL") accepted.push(`${url} → ${r.status}`)
          else expectError(r, 400, "INVALID_WEBHOOK_URL")
        }
      }
      expect(accepted).toEqual([])
      expect(lookups).toContain("intranet.test")
      // Nothing was stored: the record and the global webhook keep their URL.
      expect((await call(node.baseUrl, "GET", `/v1/records/${records[env]}`, { key })).json.data.webhookUrl).toBeNull()
      expect((await call(node.baseUrl, "GET", "/v1/webhooks", { key })).json.data.url).toBeNull()
    })
  }

  it("the reasons name the rule, and echo at most a short excerpt of the host", async () => {
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key: keys.test, body: { data: {}, webhookUrl: "http://10.1.2.3:8080/h" } })
    expectError(r, 400, "INVALID_WEBHOOK_URL", /^webhookUrl host 10\.1\.2\.3 is not a public address \(private\)$/)
    const named = await call(node.baseUrl, "PUT", "/v1/webhooks", { key: keys.test, body: { url: "http://intranet.test/h" } })
    // The range, not the address: the API is no oracle for what internal names resolve to.
    expectError(named, 400, "INVALID_WEBHOOK_URL", /^url host intranet\.test resolves to an address that is not public \(loopback\)$/)
    const long = `http://${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.localhost/h`
    const bounded = await call(node.baseUrl, "POST", "/v1/anchor", { key: keys.test, body: { data: {}, webhookUrl: long } })
    expectError(bounded, 400, "INVALID_WEBHOOK_URL")
    expect(bounded.json.error.length).toBeLessThan(160)
  })

  it("live keys also need https, no credentials and an http(s) scheme; public targets pass for both keys", async () => {
    for (const url of ["http://public.test/h", "https://user:pw@public.test/h", "gopher://public.test/", "http://93.184.216.34/h"]) {
      expectError(await call(node.baseUrl, "POST", "/v1/anchor", { key: keys.live, body: { data: {}, webhookUrl: url } }), 400, "INVALID_WEBHOOK_URL")
    }
    // Never connected to: this node runs no dispatcher, and these records are never anchored or changed.
    for (const [key, url] of [[keys.live, "https://public.test/h"], [keys.live, "https://93.184.216.34/h"], [keys.live, "https://[2606:4700::1]/h"], [keys.test,
      "http://public.test/h"], [keys.test, "http://93.184.216.34:8080/h"]])
    {
      expect((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { url }, webhookUrl: url } })).status, url).toBe(202)
    }
  })

  it("the console's webhook: the same refusals for either environment", async () => {
    const headers = await consoleAdmin(node, account)
    for (const environment of ["test", "live"] as const) {
      for (const form of ["169.254.169.254/latest/meta-data/", "10.1.2.3:8080/h", "[::ffff:127.0.0.1]/h", "intranet.test/h", "0x7f.1/h"]) {
        const url = `${environment === "live" ? "https" : "http"}://${form}`
        const r = await call(node.baseUrl, "PUT", `/console/api/accounts/${account}/webhook?environment=${environment}`, { headers, body: { url } })
        expectError(r, 400, "INVALID_WEBHOOK_URL")
      }
    }
  })
})

describe("webhook egress policy at connect time", () => {
  let node: WebhookNode
  let receiver: Receiver
  let account: string
  let live: string
  let test: string
  const lookups: Array<string> = []
  /** Loopback spellings of the receiver, written straight into records (bypassing the set-time check). */
  const spellings = (port: number) => ({
    decimal: `http://2130706433:${port}/decimal`,
    hex: `http://0x7f.1:${port}/hex`,
    mapped: `http://[::ffff:127.0.0.1]:${port}/mapped`,
    unspecified: `http://0.0.0.0:${port}/unspecified`,
    localhost: `http://localhost:${port}/localhost`,
    hostsName: `http://intranet.test:${port}/hosts-name`
  })
  const targets = new Map<string, string>()

  beforeAll(async () => {
    receiver = await startReceiver()
    node = await startWebhookNode({
      env: { WEBHOOK_DISPATCHER: "true", WEBHOOK_RETRY_SCALE: "0.0001", WEBHOOK_POLL_MS: "500", WEBHOOK_ALLOW_PRIVATE: "none" },
      resolve: standIn(lookups)
    })
    account = await node.createAccount()
    live = await node.createKey(account, "live")
    test = await node.createKey(account, "test")
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
    process.env.WEBHOOK_ALLOW_PRIVATE = "loopback"
  })

  it("test-key records pointing at loopback spellings: the listener receives nothing; the log says refused, with no status or timing", async () => {
    for (const [name, url] of Object.entries(spellings(receiver.port))) {
      const rec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { name } } })).json.data
      await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [rec.recordId, url])
      expect((await call(node.baseUrl, "PATCH", `/v1/records/${rec.recordId}`, { key: test, body: { metadata: { go: 1 } } })).status).toBe(200)
      targets.set(name, rec.recordId)
    }
    const ids = [...targets.values()]
    const rows = await waitFor("two attempts of each", async () => {
      const rows = await query<{ record_id: string; attempts: number; last_error: string | null; state: string }>(node.databaseUrl,
        "SELECT record_id, attempts, last_error, state FROM webhook_deliveries WHERE record_id = ANY($1)", [ids])
      return rows.length === ids.length && rows.every((r) => r.attempts >= 2 || r.state !== "PENDING") && rows
    })
    expect(receiver.received.map((r) => r.path)).toEqual([])
    for (const row of rows) expect(row.last_error, row.record_id).toMatch(/^refused: /)
    for (const [name, recordId] of targets) {
      const log = (await call(node.baseUrl, "GET", `/v1/webhooks/deliveries?recordId=${recordId}`, { key: test })).json.data.deliveries[0]
      for (const a of log.attempts) expect(a, name).toMatchObject({ statusCode: null, latencyMs: 0, error: expect.stringMatching(/^refused: /) })
    }
    // The name was resolved (and its answer refused); localhost is refused by name, before any lookup.
    expect(lookups).toContain("intranet.test")
    expect(lookups).not.toContain("localhost")
  })

  it("delivery time: a live target whose name now resolves to loopback is refused before connecting, and so is an IP literal or http", async () => {
    // The record passed the request-time check; then its name starts resolving to 127.0.0.1 (rebinding).
    const liveRec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { rebind: 1 } } })).json.data
    await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [liveRec.recordId, `https://rebind.test:${receiver.port}/live`])
    // An IP literal stored before the rules existed, and an http:// URL, are refused as well.
    const literal = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { literal: 1 } } })).json.data
    await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [literal.recordId, `https://127.0.0.1:${receiver.port}/literal`])
    const plain = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { plain: 1 } } })).json.data
    await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [plain.recordId, `http://public.test:${receiver.port}/plain`])
    for (const id of [liveRec.recordId, literal.recordId, plain.recordId]) {
      expect((await call(node.baseUrl, "PATCH", `/v1/records/${id}`, { key: live, body: { metadata: { go: 1 } } })).status).toBe(200)
    }
    // the refused ones: attempts logged with the reason, retried on the ladder, never reaching the receiver
    const rows = await waitFor("two refused attempts of each", async () => {
      const rows = await query<{ record_id: string; attempts: number; last_error: string }>(node.databaseUrl,
        "SELECT record_id, attempts, last_error FROM webhook_deliveries WHERE record_id = ANY($1)", [[liveRec.recordId, literal.recordId, plain.recordId]])
      return rows.length === 3 && rows.every((r) => r.attempts >= 2) && rows
    })
    const byRecord = new Map(rows.map((r) => [r.record_id, r]))
    expect(byRecord.get(liveRec.recordId)!.last_error).toBe("refused: rebind.test resolves to an address that is not public (loopback)")
    expect(byRecord.get(literal.recordId)!.last_error).toMatch(/^refused: .*127\.0\.0\.1 is not a public address \(loopback\)/)
    expect(byRecord.get(plain.recordId)!.last_error).toMatch(/^refused: .*https/)
    expect(receiver.received.filter((r) => ["/live", "/literal", "/plain"].includes(r.path))).toEqual([])
    expect(lookups).toContain("rebind.test")
  })

  it("a node with WEBHOOK_ALLOW_PRIVATE=127.0.0.1,localhost delivers the same deliveries (0.0.0.0 stays refused)", async () => {
    const databaseUrl = node.databaseUrl
    await node.stop()
    node = await startWebhookNode({ databaseUrl, env: { WEBHOOK_ALLOW_PRIVATE: "127.0.0.1,localhost" }, resolve: standIn(lookups) })
    for (const recordId of targets.values()) {
      const delivery = (await call(node.baseUrl, "GET", `/v1/webhooks/deliveries?recordId=${recordId}`, { key: test })).json.data.deliveries[0]
      expect((await call(node.baseUrl, "POST", `/v1/webhooks/deliveries/${delivery.id}/redeliver`, { key: test, body: {} })).status).toBe(202)
    }
    // Each at least once (this node may also have sent the ones still on the first node's ladder).
    const expected = ["/decimal", "/hex", "/mapped", "/localhost", "/hosts-name"]
    await waitFor("a delivery to each loopback spelling", async () => expected.every((p) => receiver.received.some((r) => r.path === p)), 15_000, 20)
    expect(new Set(receiver.received.map((r) => r.path))).toEqual(new Set(expected))
    const unspecified = targets.get("unspecified")!
    await waitFor("the 0.0.0.0 delivery's new attempt", async () =>
      ((await deliveryRow(node.databaseUrl, { recordId: unspecified }))?.round ?? 0) >= 1 &&
      ((await deliveryRow(node.databaseUrl, { recordId: unspecified }))?.attempts ?? 0) >= 1)
    const rows = await query<{ last_error: string }>(node.databaseUrl, "SELECT last_error FROM webhook_deliveries WHERE record_id = $1", [unspecified])
    expect(rows[0].last_error).toBe("refused: url host 0.0.0.0 is not a public address (unspecified)")
    // And the set-time check opens the same: loopback with a test key (http) or a live key (https).
    expect((await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: {}, webhookUrl: `http://127.0.0.1:${receiver.port}/x` } })).status).toBe(
      202
    )
    expect((await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: {}, webhookUrl: `https://localhost:${receiver.port}/x` } })).status).toBe(
      202
    )
    expectError(await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: {}, webhookUrl: "http://10.1.2.3/x" } }), 400, "INVALID_WEBHOOK_URL")
  })

  it("a global webhook set with a test key to loopback never receives the account's live events", async () => {
    expect((await call(node.baseUrl, "PUT", "/v1/webhooks", { key: test, body: { url: `${receiver.url}/global`, enabled: true } })).status).toBe(200)
    const t = (await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { g: "test" } } })).json.data
    const l = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { g: "live" } } })).json.data
    await call(node.baseUrl, "DELETE", `/v1/records/${l.recordId}`, { key: live })
    await call(node.baseUrl, "DELETE", `/v1/records/${t.recordId}`, { key: test })
    const [got] = await receiver.waitFor(1, 10_000, (r) => r.path === "/global")
    expect(JSON.parse(got.body).data.recordId).toBe(t.recordId)
    // The test key set the test environment's webhook only (migration 0013): the live event, committed
    // before the test one, has no delivery at all (the live webhook has no URL).
    expect(await query(node.databaseUrl, "SELECT 1 FROM webhook_deliveries WHERE record_id = $1", [l.recordId])).toEqual([])
    expect(receiver.received.filter((r) => r.path === "/global")).toHaveLength(1)
  })
})
