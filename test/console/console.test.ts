// The console (SPEC 9) in a real Chromium against a real node anchoring on Anvil: sign-in and out, the
// throttle, roles (a viewer changes nothing), API keys shown once and revoked, webhooks with a test event
// to a real receiver and redelivery, records browsed and filtered, the node's own public verify page, CSRF,
// an expired session, operators' pages; every page usable at 360 px, by keyboard, with labelled controls.
// One node and one browser for the file; tests run in order and build on each other's state.
//   npx vitest run test/console/console.test.ts
//   UPDATE_SCREENSHOTS=1 npx vitest run test/console/console.test.ts    # also refreshes docs/console/*.png
import { createHmac } from "node:crypto"
import * as Fs from "node:fs"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { bundleLink } from "../../src/certificates/bundleUrl.ts"
import { useBrowser, WAIT_MS } from "../support/browser.ts"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"
import { clone } from "../verify/support.ts"
import { allAnchored } from "../evm/support.ts"
import { startReceiver, type Receiver } from "../webhooks/support.ts"
import { accountNamed, docsScreenshot, EXPLORER, heading, scrollWidth, signIn, startConsoleNode, unlabelledControls, type ConsoleNode } from "./support.ts"

// Fabric and hybrid records are refused on a node no Fabric network serves (CHAIN_NOT_CONFIGURED);
// naming one here, served by no node of this test, keeps them accepted and QUEUED, as this file needs.
process.env.FABRIC_TEST_NETWORK_ID = "fabric-unserved"
process.env.FABRIC_LIVE_NETWORK_ID = "fabric-unserved"

const browser = useBrowser()
let env: ConsoleNode
let receiver: Receiver
let base = ""
let accountId = ""
let apiKey = ""
/** Records: three EVM ones (anchored), one Fabric one (stays QUEUED: no Fabric network here). */
const evmIds: Array<string> = []
let fabricId = ""

const OPERATOR = { email: "ops@example.com", password: "operator passphrase 1" }
const ADMIN = { email: "admin@example.com", password: "admin passphrase 1" }
const VICTIM = { email: "typo@example.com", password: "the right passphrase" }
const VIEWER = { email: "viewer@example.com", password: "viewer passphrase 1" }

beforeAll(async () => {
  env = await startConsoleNode()
  base = env.node.baseUrl
  receiver = await startReceiver()
  accountId = await env.node.createAccount({ name: "Acme Records" })
  apiKey = (await env.node.createKey(accountId)).key
  await env.user(OPERATOR.email, OPERATOR.password, { operator: true })
  await env.user(ADMIN.email, ADMIN.password, { accountId, role: "admin" })
  await env.user(VICTIM.email, VICTIM.password, { accountId, role: "viewer" })
  for (const [i, body] of [{ data: { invoice: 1 } }, { data: { invoice: 2 }, metadata: { customer: "c-7" } }, { data: { invoice: 3 },
    collection: "invoices-2026" }, { data: { invoice: 4 }, chain: "fabric" }].entries())
  {
    const r = await call(base, "POST", "/v1/anchor", { key: apiKey, body })
    if (r.status !== 202) throw new Error(`anchor ${i}: ${r.status} ${r.text}`)
    if (i < 3) evmIds.push(r.json.data.recordId)
    else fabricId = r.json.data.recordId
  }
  await waitFor("EVM records ANCHORED", allAnchored(env.node.databaseUrl, evmIds), 30_000)
}, 180_000)

afterAll(async () => {
  await receiver?.close()
  await env?.stop()
})

// Each test's pages are closed when the next begins (a failed test's are first photographed by the harness).
beforeEach(async () => {
  for (const context of browser().browser.contexts()) await context.close()
})

/** A page in a fresh browser context (its own cookies). */
const fresh = async (viewport = { width: 1100, height: 800 }, name?: string) => {
  browser().clearErrors()
  return browser().newPage(viewport, name)
}

const signedInAs = async (who: { email: string; password: string }, viewport?: { width: number; height: number }) => {
  const page = await fresh(viewport, who.email.split("@")[0])
  await page.goto(`${base}/console/`)
  await heading(page, "Sign in to the console")
  await signIn(page, base, who.email, who.password)
  await page.locator("#top .user").waitFor({ timeout: WAIT_MS })
  return page
}

const go = async (page: Page, hash: string, title: string | RegExp) => {
  await page.goto(`${base}/console/${hash}`)
  await heading(page, title)
}

/** A call from inside the page (its cookie, its origin), as the console's own script would make it. */
const pageFetch = (page: Page, path: string, init: { method: string; body?: unknown; csrf?: string | "session" }) =>
  page.evaluate(async ({ path, init }) => {
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (init.csrf === "session") {
      const s: any = await (await fetch("/console/api/session")).json()
      headers["x-csrf-token"] = s.data.csrfToken
    } else if (init.csrf !== undefined) headers["x-csrf-token"] = init.csrf
    const r = await fetch(path, { method: init.method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
    return { status: r.status, json: await r.json().catch(() => undefined) as any }
  }, { path, init })

const acct = (page: string) => `#/a/${accountId}/${page}`

describe("the console", () => {
  it("signs in with a password and out again; the session cookie is HttpOnly, SameSite=Strict, Path=/console", async () => {
    const page = await fresh()
    const response = await page.goto(`${base}/console`)
    expect(response!.headers()["content-security-policy"]).toContain("script-src 'self'")
    await heading(page, "Sign in to the console")
    await docsScreenshot(browser(), page, "sign-in")
    await signIn(page, base, ADMIN.email, ADMIN.password)
    await heading(page, "Overview — Acme Records")
    const [cookie] = (await page.context().cookies()).filter((c) => c.name === "anchord_session")
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console", secure: false })
    expect(cookie!.value).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // The cookie is not readable by the page's script.
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe("")
    expect(await page.locator("#top .user").textContent()).toBe("admin@example.com (admin of Acme Records)")

    await page.getByRole("button", { name: "Sign out", exact: true }).click()
    await heading(page, "Sign in to the console")
    expect(await page.getByRole("status").first().textContent()).toBe("You are signed out.")
    expect((await page.context().cookies()).filter((c) => c.name === "anchord_session")).toEqual([])
    // The session is gone on the node too: the old cookie signs no one in.
    const stale = await call(base, "GET", "/console/api/session", { headers: { cookie: `anchord_session=${cookie!.value}` } })
    expect([stale.status, stale.json.errorCode]).toEqual([401, "NOT_SIGNED_IN"])
    // An API key never signs anyone in to the console.
    const byKey = await call(base, "GET", "/console/api/session", { headers: { authorization: `Bearer ${apiKey}`, cookie: `anchord_session=${apiKey}` } })
    expect(byKey.status).toBe(401)
    expect(browser().errors().filter((e) => !e.includes("401"))).toEqual([])
    await page.context().close()
  })

  it("refuses a wrong password, then pauses that email from this address with a clear message, the right password included", async () => {
    const page = await fresh()
    await page.goto(`${base}/console/#/sign-in`)
    const alert = page.getByRole("alert")
    // Each answer replaces the form's message: clear it first so each attempt's own is read.
    const attempt = async (password: string) => {
      await page.locator(".form-status").evaluate((e) => e.replaceChildren())
      await signIn(page, base, VICTIM.email, password)
      await alert.waitFor({ timeout: WAIT_MS })
    }
    for (let i = 1; i <= 5; i++) {
      await attempt(`wrong guess ${i}`)
      expect(await alert.textContent()).toMatch(/^Wrong email or password\./)
      if (i === 4) {
        expect(await alert.textContent()).toBe("Wrong email or password. 1 more failed attempt and sign-in for this email pauses from your network address.")
      }
    }
    await attempt(VICTIM.password)
    await expect.poll(() => alert.textContent(), { timeout: WAIT_MS }).toBe(
      "Too many failed sign-in attempts for this email from your network address. Try again in 15 minutes."
    )
    expect(await page.locator("form").getAttribute("data-error-code")).toBe("SIGN_IN_THROTTLED")
    await docsScreenshot(browser(), page, "sign-in-throttled")
    // Over the API: 429 with Retry-After.
    const r = await call(base, "POST", "/console/api/session", { body: VICTIM })
    expect(r.status).toBe(429)
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(800)
    await page.context().close()
  })

  it("an admin invites a viewer by a one-time link; the viewer chooses a password and is signed in", async () => {
    const admin = await signedInAs(ADMIN)
    await go(admin, acct("members"), "Members")
    await admin.getByLabel("Email").fill(VIEWER.email)
    await admin.getByLabel("Role").selectOption("viewer")
    await admin.getByRole("button", { name: "Create invitation link" }).click()
    const link = (await admin.locator("#invitation-link").textContent({ timeout: WAIT_MS }))!
    expect(link).toMatch(new RegExp(`^${base}/console/#/invite/[A-Za-z0-9_-]{43}$`))
    // Pending invitations are listed for admins, and revocable.
    await admin.getByLabel("Email").fill("changed-my-mind@example.com")
    await admin.getByRole("button", { name: "Create invitation link" }).click()
    await expect.poll(() => admin.locator("#invitation-link").textContent(), { timeout: WAIT_MS }).not.toBe(link)
    const revoked = (await admin.locator("#invitation-link").textContent())!
    await admin.reload()
    await heading(admin, "Members")
    const pending = admin.locator("table", { has: admin.locator("caption", { hasText: "Pending invitations" }) })
    await expect.poll(() => pending.locator("td[data-label=\"Email\"]").allInnerTexts(), { timeout: WAIT_MS })
      .toEqual(["changed-my-mind@example.com", VIEWER.email])
    await docsScreenshot(browser(), admin, "members")
    expect(await pending.locator("td[data-label=\"Invited by\"]").first().innerText()).toBe(ADMIN.email)
    await admin.getByRole("button", { name: "Revoke the invitation of changed-my-mind@example.com" }).click()
    await admin.getByRole("dialog").getByRole("button", { name: "Revoke" }).click()
    await expect.poll(() => pending.locator("td[data-label=\"Email\"]").allInnerTexts(), { timeout: WAIT_MS }).toEqual([VIEWER.email])
    const gone = await fresh()
    await gone.goto(revoked)
    await expect.poll(() => gone.getByRole("alert").textContent(), { timeout: WAIT_MS }).toMatch(/^This link is not valid/)
    await gone.context().close()

    const viewer = await fresh(undefined, "viewer")
    await viewer.goto(link)
    await heading(viewer, "Accept the invitation")
    expect(await viewer.locator("main").innerText()).toContain("You are invited as a viewer of Acme Records")
    await viewer.getByLabel("Choose a password").fill(VIEWER.password)
    await viewer.getByLabel("Password again").fill(VIEWER.password)
    await viewer.getByRole("button", { name: "Create my user and sign in" }).click()
    await heading(viewer, "Overview — Acme Records")
    expect(await viewer.locator("#top .user").textContent()).toBe("viewer@example.com (viewer of Acme Records)")
    // Accepted: no longer pending.
    await admin.reload()
    expect(await admin.locator("#no-invitations").textContent({ timeout: WAIT_MS })).toBe("No invitation waits to be accepted.")
    // The link worked once.
    const again = await fresh()
    await again.goto(link)
    await expect.poll(() => again.getByRole("alert").textContent(), { timeout: WAIT_MS }).toMatch(/^This link is not valid/)
    await Promise.all([admin.context().close(), viewer.context().close(), again.context().close()])
  })

  it("a viewer sees the keys but cannot create one: no form, and the node refuses (403) when asked anyway", async () => {
    const page = await signedInAs(VIEWER)
    await go(page, acct("keys"), "Settings › API keys")
    expect(await page.getByRole("button", { name: "Create key" }).count()).toBe(0)
    expect(await page.getByRole("status").first().textContent()).toContain("You are a viewer of this account")
    expect(await page.getByRole("button", { name: /^Revoke/ }).count()).toBe(0)
    const created = await pageFetch(page, `/console/api/accounts/${accountId}/keys`, { method: "POST", body: { name: "sneaky", environment: "test" },
      csrf: "session" })
    expect([created.status, created.json.errorCode]).toEqual([403, "FORBIDDEN"])
    expect(created.json.error).toBe("Viewers can look but not change anything: ask an admin of this account.")
    // Nor any secret.
    const secret = await pageFetch(page, `/console/api/accounts/${accountId}/webhook/secret/reveal?environment=live`, { method: "POST", body: {},
      csrf: "session" })
    expect([secret.status, secret.json.error]).toEqual([403, "Viewers cannot see secrets: ask an admin of this account."])
    await go(page, acct("webhooks"), "Webhooks")
    expect(await page.getByRole("button", { name: "Reveal secret" }).count()).toBe(0)
    expect(await page.getByLabel("URL", { exact: true }).isDisabled()).toBe(true)
    // Another account is not found, not forbidden.
    const other = await pageFetch(page, "/console/api/accounts/acct_0000000000000000/keys", { method: "GET" })
    expect([other.status, other.json.errorCode]).toEqual([404, "NOT_FOUND"])
    await page.context().close()
  })

  it("an admin creates a key (shown once, with copy), uses it against the API, revokes it and gets 401", async () => {
    const page = await signedInAs(ADMIN)
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"])
    await go(page, acct("keys"), "Settings › API keys")
    await page.getByLabel("Name").fill("billing service")
    await page.getByLabel("Environment", { exact: true }).last().selectOption("test")
    await page.getByRole("button", { name: "Create key" }).click()
    const key = (await page.locator("#new-key").textContent({ timeout: WAIT_MS }))!
    expect(key).toMatch(/^dcp_test_[A-Za-z0-9]{32}$/)
    expect(await page.locator(".once").innerText()).toContain("shown this once")
    // Listed at once, beside the panel that shows it (before "Done" or a reload).
    await page.locator("#keys-list tr", { hasText: "billing service" }).waitFor({ timeout: WAIT_MS })
    expect(await page.locator("#keys-list tr", { hasText: "billing service" }).innerText()).toContain(`${key.slice(0, 13)}…${key.slice(-4)}`)
    await page.locator(".once").getByRole("button", { name: "Copy" }).click()
    await expect.poll(() => page.evaluate(() => (globalThis as any).navigator.clipboard.readText()), { timeout: WAIT_MS }).toBe(key)
    await docsScreenshot(browser(), page, "api-keys-created")

    // The key works against the API.
    const anchored = await call(base, "POST", "/v1/anchor", { key, body: { data: { fromTheConsole: true } } })
    expect(anchored.status).toBe(202)
    // Shown once: after "Done" the page shows only its prefix and last four characters; its last use arrives within seconds.
    await page.getByRole("button", { name: "Done: I stored it" }).click()
    await page.locator("#new-key").waitFor({ state: "detached", timeout: WAIT_MS })
    const row = page.locator("tr", { hasText: "billing service" })
    await row.waitFor({ timeout: WAIT_MS })
    expect(await page.locator("main").innerText()).not.toContain(key)
    expect(await row.innerText()).toContain(`${key.slice(0, 13)}…${key.slice(-4)}`)
    await expect.poll(async () => {
      await page.reload()
      return page.locator("tr", { hasText: "billing service" }).locator("td[data-label=\"Last used\"]").innerText()
    }, { timeout: 20_000, interval: 1_000 }).toMatch(/^\d{4}-\d{2}-\d{2} /)
    await docsScreenshot(browser(), page, "api-keys")

    // Revoke, with confirmation (Cancel first: nothing happens).
    await page.getByRole("button", { name: "Revoke billing service" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
    expect((await call(base, "GET", "/v1/usage", { key })).status).toBe(200)
    await page.getByRole("button", { name: "Revoke billing service" }).click()
    expect(await page.getByRole("dialog").innerText()).toContain("will be refused (401)")
    await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click()
    await expect.poll(() => page.locator("tr", { hasText: "billing service" }).locator("td[data-label=\"Status\"]").innerText(), { timeout: WAIT_MS }).toBe(
      "revoked"
    )
    const refused = await call(base, "GET", "/v1/usage", { key })
    expect([refused.status, refused.json.errorCode]).toEqual([401, "EXPIRED_API_KEY"])
    await page.context().close()
  })

  it("webhooks: sets the URL, sends a test event to a real receiver, shows it in the deliveries, redelivers it; rotates the secret", async () => {
    const page = await signedInAs(ADMIN)
    await go(page, acct("webhooks"), "Webhooks")
    await page.getByLabel("URL", { exact: true }).fill(`${receiver.url}/hooks`)
    await page.getByLabel("Enabled: send events here").check()
    await page.getByRole("button", { name: "Save" }).click()
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Saved." }).count(), { timeout: WAIT_MS }).toBe(1)
    const secretLine = page.locator("#secret-line")
    expect(await secretLine.innerText()).toMatch(/^Secret: whsec_\S*… \(hidden\)$/)
    await page.getByRole("button", { name: "Reveal secret" }).click()
    const secret = (await page.locator("#secret-value").textContent({ timeout: WAIT_MS }))!
    expect(secret).toMatch(/^whsec_/)
    // Revealed in place of the preview, which is gone ("(hidden)" too); the same button hides it again.
    expect(await secretLine.innerText()).not.toContain("(hidden)")
    expect(await page.locator("#secret-preview").count()).toBe(0)
    await page.getByRole("button", { name: "Hide secret" }).click()
    await expect.poll(() => secretLine.innerText(), { timeout: WAIT_MS }).toMatch(/^Secret: whsec_\S*… \(hidden\)$/)
    expect(await page.locator("#secret-value").count()).toBe(0)
    expect(await page.getByRole("button", { name: "Reveal secret" }).getAttribute("aria-expanded")).toBe("false")

    const before = receiver.received.length
    await page.getByRole("button", { name: "Send test event" }).click()
    const outcome = page.locator("#test-result .msg")
    await expect.poll(() => outcome.getAttribute("data-status"), { timeout: WAIT_MS }).toBe("SUCCEEDED")
    expect(await outcome.innerText()).toMatch(/^SUCCEEDED Delivered: HTTP 200 in \d+ ms\.$/)
    const [got] = await receiver.waitFor(before + 1)
      .then((all) => all.slice(before))
    expect(got!.path).toBe("/hooks")
    expect(got!.headers["x-service-event"]).toBe("TEST")
    expect(got!.headers["x-webhook-signature"]).toBe(`sha256=${createHmac("sha256", secret).update(got!.body).digest("hex")}`)
    const body = JSON.parse(got!.body)
    expect(body).toMatchObject({ event: "webhook.test", data: { recordId: null, status: "TEST", environment: "test" } })
    await docsScreenshot(browser(), page, "webhooks")

    // In the deliveries page, with its attempt; then redelivered.
    await page.getByRole("link", { name: "See it in the deliveries" }).click()
    await heading(page, "Deliveries")
    // One dense row per delivery; its attempts open below it.
    const row = page.locator("tr.delivery[data-event=\"webhook.test\"]")
    await row.waitFor({ timeout: WAIT_MS })
    expect(await row.getAttribute("data-status")).toBe("SUCCEEDED")
    expect(await row.locator("td[data-label=\"Last attempt\"]").innerText()).toMatch(/^HTTP 200 in \d+ ms$/)
    const deliveryId = (await row.getAttribute("data-delivery"))!
    const card = page.locator(`tr.delivery-detail[data-delivery="${deliveryId}"]`)
    expect(await card.isVisible()).toBe(false)
    await row.getByRole("button", { name: `Details of ${deliveryId}` }).click()
    await card.waitFor({ state: "visible", timeout: WAIT_MS })
    expect(await row.getByRole("button", { name: `Details of ${deliveryId}` }).getAttribute("aria-expanded")).toBe("true")
    expect(await card.locator("td[data-label=\"Status\"]").first().innerText()).toBe("HTTP 200")
    expect(await card.locator("td[data-label=\"Latency\"]").first().innerText()).toMatch(/^\d+ ms$/)
    await card.getByRole("button", { name: /^Redeliver/ }).click()
    const again = await receiver.waitFor(before + 2)
    expect(again[before + 1]!.headers["x-service-event-id"]).toBe(got!.headers["x-service-event-id"])
    await expect.poll(async () => {
      await page.getByRole("button", { name: "Refresh" }).click()
      return card.locator("tbody tr").count()
    }, { timeout: WAIT_MS, interval: 500 }).toBe(2)
    // Still open after the page is drawn again.
    expect(await card.isVisible()).toBe(true)
    expect(await card.locator("td[data-label=\"Round\"]").allInnerTexts()).toEqual(["0", "1"])
    expect(await row.locator("td[data-label=\"Attempts\"]").innerText()).toBe("2")
    // Filtered by status.
    await page.getByLabel("Status").selectOption("FAILED")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.getByText("No delivery matches.").waitFor({ timeout: WAIT_MS })
    await page.getByRole("link", { name: "Clear" }).click()
    await card.waitFor({ timeout: WAIT_MS })
    // Dense: a delivery's row is one line of text at 1100 px (a card with its attempts was ~450 px).
    expect(await row.evaluate((e) => (e as any).getBoundingClientRect().height)).toBeLessThan(60)
    await docsScreenshot(browser(), page, "deliveries")

    // Batched requests: one card per request with its events; the whole request redelivered. The row is written as the
    // dispatcher writes a batch's (test/webhooks/batched.test.ts sends real ones); its event is the test event above.
    const eventId = got!.headers["x-service-event-id"]!
    const requestId = `whb_${"ab".repeat(16)}`
    await query(env.node.databaseUrl, `INSERT INTO webhook_requests (id, account_id, environment, url, kind, event_ids, record_ids, started_at,
      status_code, latency_ms, error, failed_event_ids, node_id) VALUES ($1, $2, 'test', $3, 'webhook.test', ARRAY[$4], ARRAY[''], now(), 200, 3, NULL,
      ARRAY[$4], 'console-test')`, [requestId, accountId, `${receiver.url}/hooks`, eventId])
    await go(page, acct("requests"), "Requests")
    const request = page.locator(`div.webhook-request[data-request="${requestId}"]`)
    await request.waitFor({ timeout: WAIT_MS })
    expect((await request.innerText()).replace(/\s+/g, " ")).toMatch(/Answer HTTP 200 in 3 ms Events 1, 1 not taken/)
    expect(await request.locator("td[data-label=\"Taken\"]").innerText()).toBe("no")
    await request.getByRole("button", { name: `Redeliver request ${requestId}` }).click()
    await page.getByRole("status").filter({ hasText: `1 events of ${requestId} queued again` }).waitFor({ timeout: WAIT_MS })
    const third = await receiver.waitFor(before + 3)
    expect(third[before + 2]!.headers["x-service-event-id"]).toBe(eventId)
    await page.getByLabel("Record id").fill("nope")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.getByText("No batched request matches.").waitFor({ timeout: WAIT_MS })

    // Rotation: confirmed with the overlap's end shown, then the switch confirmed.
    await go(page, acct("webhooks"), "Webhooks")
    await page.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Rotate" }).click()
    const notice = page.locator("#rotation")
    await notice.waitFor({ timeout: WAIT_MS })
    expect(await notice.innerText()).toMatch(/previous secret still signs x-webhook-signature until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/)
    await page.getByRole("button", { name: "Confirm the switch" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Confirm the switch" }).click()
    await notice.waitFor({ state: "detached", timeout: WAIT_MS })

    // A viewer sees where events go (the URL's origin) but not the URL itself, which may carry a credential.
    const viewer = await signedInAs(VIEWER)
    await go(viewer, acct("webhooks"), "Webhooks")
    expect(await viewer.getByLabel("URL", { exact: true }).inputValue()).toBe(`${receiver.url}/…`)
    expect(await viewer.locator("#secret-preview").textContent()).toBe("whsec_…")
    const deliveries = await pageFetch(viewer, `/console/api/accounts/${accountId}/deliveries?environment=test`, { method: "GET" })
    expect(deliveries.json.data.deliveries.map((d: { url: string }) => d.url)).toEqual(deliveries.json.data.deliveries.map(() => `${receiver.url}/…`))
    await Promise.all([page.context().close(), viewer.context().close()])
  })

  it("webhooks per environment: the page names the environment it shows; live has its own settings and secret, changed without touching test's", async () => {
    const page = await signedInAs(ADMIN)
    await go(page, acct("webhooks"), "Webhooks")
    const which = page.locator("#webhook-environment")
    expect(await which.innerText()).toMatch(/^Test environment\. /)
    expect(await page.getByLabel("URL", { exact: true }).inputValue()).toBe(`${receiver.url}/hooks`)
    await page.getByRole("button", { name: "Reveal secret" }).click()
    const testSecret = (await page.locator("#secret-value").textContent({ timeout: WAIT_MS }))!

    await page.getByRole("button", { name: "Show the live webhook" }).click()
    await expect.poll(() => which.innerText(), { timeout: WAIT_MS }).toMatch(/^Live environment\. /)
    // The header's switch follows (one environment for the whole console).
    expect(await page.locator("#environment").inputValue()).toBe("live")
    expect(await page.getByRole("heading", { name: "Global webhook (live)" }).count()).toBe(1)
    expect(await page.getByLabel("URL", { exact: true }).inputValue()).toBe("")
    await page.getByRole("button", { name: "Reveal secret" }).click()
    const liveSecret = (await page.locator("#secret-value").textContent({ timeout: WAIT_MS }))!
    expect(liveSecret).toMatch(/^whsec_/)
    expect(liveSecret).not.toBe(testSecret)
    // Changed and rotated in live: test keeps its format and secret.
    await page.getByLabel("Payload format").selectOption("envelope")
    await page.getByLabel("Delivery", { exact: true }).selectOption("batch")
    await page.getByLabel("Most events per request (batches)").fill("250")
    await page.getByRole("button", { name: "Save" }).click()
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Saved." }).count(), { timeout: WAIT_MS }).toBe(1)
    await page.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Rotate" }).click()
    await page.locator("#rotation").waitFor({ timeout: WAIT_MS })
    const live = await pageFetch(page, `/console/api/accounts/${accountId}/webhook?environment=live`, { method: "GET" })
    expect(live.json.data).toMatchObject({ url: null, payloadFormat: "envelope", rotation: { previousSecretExpiresAt: expect.any(String) },
      delivery: { mode: "batch", maxEvents: 250, maxWaitMs: 0 } })

    await page.getByRole("button", { name: "Show the test webhook" }).click()
    await expect.poll(() => which.innerText(), { timeout: WAIT_MS }).toMatch(/^Test environment\. /)
    expect(await page.locator("#rotation").count()).toBe(0)
    expect(await page.getByLabel("Payload format").inputValue()).toBe("multichain")
    expect(await page.getByLabel("Delivery", { exact: true }).inputValue()).toBe("single")
    await page.getByRole("button", { name: "Reveal secret" }).click()
    expect(await page.locator("#secret-value").textContent({ timeout: WAIT_MS })).toBe(testSecret)
    // The console's API names the environment on every webhook call.
    const unnamed = await pageFetch(page, `/console/api/accounts/${accountId}/webhook`, { method: "GET" })
    expect([unnamed.status, unnamed.json.errorCode]).toEqual([400, "VALIDATION_ERROR"])
    await page.context().close()
  })

  it("records: browses, filters by status, chain and date, searches by id and hash; a record's anchors, proof, certificate and verify link", async () => {
    const page = await signedInAs(ADMIN)
    await go(page, acct("records"), "Records")
    const ids = () => page.locator("td[data-label=\"Record\"] code").allInnerTexts()
    await expect.poll(ids, { timeout: WAIT_MS }).toEqual(expect.arrayContaining([...evmIds, fabricId]))
    await docsScreenshot(browser(), page, "records")

    const apply = async (f: { status?: string; chain?: string; collection?: string; q?: string; from?: string; to?: string }) => {
      await page.getByLabel("Status").selectOption(f.status ?? "")
      await page.getByLabel("Chain").selectOption(f.chain ?? "")
      await page.getByLabel("Collection").fill(f.collection ?? "")
      await page.getByLabel("Search by record id or hash").fill(f.q ?? "")
      await page.getByLabel("Created from").fill(f.from ?? "")
      await page.getByLabel("Created to").fill(f.to ?? "")
      // The page is drawn anew for the filters: wait until this one is gone and the new one is there.
      const old = await page.locator("main > section").elementHandle()
      await page.getByRole("button", { name: "Apply" }).click()
      await page.waitForFunction((e) => !(e as any).isConnected, old)
      await heading(page, "Records")
      await page.locator("main table, #records-empty").first().waitFor({ timeout: WAIT_MS })
    }
    // Every record of the account is anchored by now, but the Fabric one.
    const all = (await call(base, "GET", "/v1/records?limit=100", { key: apiKey })).json.data.records as Array<{ recordId: string }>
    await waitFor("EVM records ANCHORED", allAnchored(env.node.databaseUrl, all.map((r) => r.recordId).filter((id) => id !== fabricId)), 30_000)
    await apply({ status: "QUEUED" })
    expect(await ids()).toEqual([fabricId])
    await apply({ chain: "evm" })
    expect((await ids()).sort()).toEqual(expect.arrayContaining([...evmIds].sort()))
    expect(await ids()).not.toContain(fabricId)
    await apply({ status: "ANCHORED", chain: "fabric" })
    await page.locator("#records-empty").waitFor({ timeout: WAIT_MS })
    const today = new Date(env.clock.now()).toISOString().slice(0, 10)
    await apply({ from: "2000-01-01", to: "2000-01-02" })
    await page.locator("#records-empty").waitFor({ timeout: WAIT_MS })
    await apply({ from: today, to: today })
    expect(await ids()).toContain(fabricId)
    // One record was submitted with a collection: the filter finds it alone.
    await apply({ collection: "invoices-2026" })
    expect(await ids()).toEqual([evmIds[2]])
    // The list shows each record's collection.
    expect(await page.locator("td[data-label=\"Collection\"]").allInnerTexts()).toEqual(["invoices-2026"])
    await page.getByRole("link", { name: evmIds[2] }).click()
    await heading(page, `Record ${evmIds[2]}`)
    expect(await page.locator(".facts dt", { hasText: "Collection" }).locator("xpath=following-sibling::dd[1]").innerText()).toBe("invoices-2026")
    // Each time says whose clock it is; the collection links to the list filtered by it.
    expect(await page.locator(".facts dt", { hasText: "Created" }).locator("xpath=following-sibling::dd[1]").innerText()).toMatch(/UTC accepted by this node/)
    await page.locator(".facts").getByRole("link", { name: "invoices-2026" }).click()
    await heading(page, "Records")
    expect(await page.getByLabel("Collection").inputValue()).toBe("invoices-2026")
    expect(await ids()).toEqual([evmIds[2]])
    await go(page, acct("records"), "Records")
    await page.locator("main table").waitFor({ timeout: WAIT_MS })
    expect(await page.locator("tr", { hasText: evmIds[0]! }).locator("td[data-label=\"Collection\"]").innerText()).toBe("—")
    await apply({ q: evmIds[1] })
    expect(await ids()).toEqual([evmIds[1]])
    const record = await call(base, "GET", `/v1/records/${evmIds[1]}`, { key: apiKey })
    await apply({ q: record.json.data.hash })
    expect(await ids()).toEqual([evmIds[1]])

    // One record: its anchor with an explorer link, its proof bundle, its certificate, the verify page.
    await page.getByRole("link", { name: evmIds[1] }).click()
    await heading(page, `Record ${evmIds[1]}`)
    const tx = record.json.data.anchors[0].txHash
    expect(await page.getByRole("link", { name: tx }).getAttribute("href")).toBe(`${EXPLORER}/tx/${tx}`)
    // "Anchors" is said once (the section's heading); the table's caption is for screen readers only.
    expect(await page.getByText("Anchors", { exact: true }).count()).toBe(1)
    expect(await page.locator("caption", { hasText: "Anchors of this record" }).evaluate((e) => (e as any).className)).toBe("visually-hidden")
    expect(await page.locator(".facts dt", { hasText: "Collection" }).locator("xpath=following-sibling::dd[1]").innerText()).toBe("— (none)")
    expect(await page.locator("pre.json").first().innerText()).toContain("\"customer\": \"c-7\"")
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download proof bundle" }).click()])
    const bundle = JSON.parse(Fs.readFileSync((await download.path())!, "utf8"))
    expect(bundle).toEqual((await call(base, "GET", `/v1/records/${evmIds[1]}/proof`, { key: apiKey })).json.data)
    expect(download.suggestedFilename()).toBe(`proof-${evmIds[1]}.json`)
    const pdf = await page.evaluate(async (href) => {
      const r = await fetch(href)
      return { type: r.headers.get("content-type"), disposition: r.headers.get("content-disposition"),
        head: new TextDecoder().decode((await r.arrayBuffer()).slice(0, 5)) }
    }, await page.getByRole("link", { name: "Certificate (PDF)" }).getAttribute("href") as string)
    expect(pdf).toEqual({ type: "application/pdf", disposition: expect.stringMatching(/^inline; filename="CERT-\d+-[0-9a-f]{8}\.pdf"$/), head: "%PDF-" })
    await docsScreenshot(browser(), page, "record")
    const [popup] = await Promise.all([page.waitForEvent("popup"), page.getByRole("button", { name: "Verify in the public verify page" }).click()])
    await popup.locator("#result[aria-busy=\"false\"] #verdict").waitFor({ timeout: WAIT_MS })
    expect(await popup.locator("#verdict").getAttribute("data-outcome")).toBe("verified")
    expect(popup.url()).toBe(await bundleLink(`${base}/verify`, bundle))
    await page.context().close()
  })

  it("the node's public verify page: a good bundle verifies, a tampered one does not (with the reason), an unreachable RPC could not check", async () => {
    const bundle = (await call(base, "GET", `/v1/records/${evmIds[0]}/proof`, { key: apiKey })).json.data
    // Served with its CSP (the listed public RPC allowed), ETags and revalidation; config.json lists the public RPC, never the signer's.
    const served = await fetch(`${base}/verify`)
    expect(served.headers.get("content-security-policy")).toContain(`connect-src 'self' ${env.publicRpc.url} https:`)
    expect(served.headers.get("cache-control")).toBe("no-cache")
    const revalidated = await fetch(`${base}/verify/verify.js`, {
      headers: { "if-none-match": (await fetch(`${base}/verify/verify.js`)).headers.get("etag")! }
    })
    expect(revalidated.status).toBe(304)
    const config = await (await fetch(`${base}/verify/config.json`)).json()
    expect(config).toEqual({
      networks: [{ networkId: env.networkId, chainType: "evm", chainId: env.chainId, rpcUrl: env.publicRpc.url, explorerUrl: EXPLORER }]
    })

    const page = await fresh({ width: 360, height: 800 }, "verify")
    await page.goto(`${base}/verify`)
    const proof = page.getByLabel("Proof bundle, IN_PLACE document or record lookup (JSON)")
    const verify = async (doc: unknown) => {
      await proof.fill(JSON.stringify(doc, null, 2))
      await page.getByRole("button", { name: "Verify" }).click()
      await page.locator("#result[aria-busy=\"false\"] #verdict").waitFor({ timeout: WAIT_MS })
      return { outcome: await page.locator("#verdict").getAttribute("data-outcome"), text: (await page.locator("#result").innerText()).replace(/\s+/g, " ") }
    }
    const good = await verify(bundle)
    expect(good.outcome).toBe("verified")
    expect(good.text).toContain(`checked in this browser through ${env.publicRpc.url}`)
    await docsScreenshot(browser(), page, "verify-verified")

    const tampered = clone(bundle)
    tampered.anchors[0].merkleRoot = `0x${"ab".repeat(32)}`
    const bad = await verify(tampered)
    expect(bad.outcome).toBe("not-verified")
    expect(bad.text).toContain("Not verified")
    expect(await page.locator("li.check[data-check=\"merkle-proof\"]").innerText()).toMatch(
      /^FAIL\s+merkle-proof\s+the proof does not fold the leaf of [0-9a-f]{64} to root 0x(ab){32}$/
    )
    await docsScreenshot(browser(), page, "verify-not-verified")

    await env.publicRpc.down()
    try {
      const down = await verify(bundle)
      expect(down.outcome).toBe("could-not-check")
      expect(down.text).toContain("Could not check")
      expect(await page.locator("li.check[data-check=\"evm.chain-id\"]").innerText()).toMatch(/^COULD NOT CHECK\s+evm\.chain-id\s+.*unreachable/)
    } finally {
      await env.publicRpc.up()
    }
    expect(browser().errors().filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(e))).toEqual([])
    await page.context().close()
  })

  it("refuses a state change without the session's CSRF token, with a wrong one, and from another site", async () => {
    const page = await signedInAs(ADMIN)
    const path = `/console/api/accounts/${accountId}/keys`
    const none = await pageFetch(page, path, { method: "POST", body: { name: "csrf", environment: "test" } })
    expect([none.status, none.json.errorCode]).toEqual([403, "CSRF_TOKEN_INVALID"])
    expect(none.json.error).toContain("none was sent")
    const wrong = await pageFetch(page, path, { method: "POST", body: { name: "csrf", environment: "test" }, csrf: "A".repeat(43) })
    expect([wrong.status, wrong.json.errorCode]).toEqual([403, "CSRF_TOKEN_INVALID"])
    const right = await pageFetch(page, path, { method: "POST", body: { name: "csrf", environment: "test" }, csrf: "session" })
    expect(right.status).toBe(200)
    // Another site's page: refused by Origin even with the cookie and a right token (and the browser would not send a SameSite=Strict cookie anyway).
    const cookie = (await page.context().cookies()).find((c) => c.name === "anchord_session")!.value
    const csrf = (await pageFetch(page, "/console/api/session", { method: "GET" })).json.data.csrfToken
    const crossSite = await call(base, "POST", path, {
      headers: { cookie: `anchord_session=${cookie}`, "x-csrf-token": csrf, origin: "https://evil.example" },
      body: { name: "csrf", environment: "test" }
    })
    expect([crossSite.status, crossSite.json.errorCode]).toEqual([403, "CSRF_TOKEN_INVALID"])
    expect(crossSite.json.error).toBe("Refused: this request came from another site.")
    // Signing in from another site too (login CSRF).
    const login = await call(base, "POST", "/console/api/session", { headers: { origin: "https://evil.example" }, body: ADMIN })
    expect(login.status).toBe(403)
    // Every console answer is no-store.
    expect((await call(base, "GET", "/console/api/session", { headers: { cookie: `anchord_session=${cookie}` } })).headers.get("cache-control")).toBe(
      "no-store"
    )
    await page.context().close()
  })

  it("operators: create, activate, change the plan of and suspend accounts; see the networks", async () => {
    const page = await signedInAs(OPERATOR)
    await heading(page, "Accounts")
    await page.getByLabel("Name").fill("Globex")
    await page.getByLabel("Plan", { exact: true }).first().selectOption("STARTUP")
    await page.getByLabel("Activate at once (keys can be created only for active accounts)").uncheck()
    await page.getByRole("button", { name: "Create account" }).click()
    const row = page.locator("tr", { hasText: "Globex" })
    await row.waitFor({ timeout: WAIT_MS })
    expect(await row.locator("td[data-label=\"Status\"]").innerText()).toBe("PENDING")
    await row.getByRole("button", { name: "Activate Globex" }).click()
    await expect.poll(() => row.locator("td[data-label=\"Status\"]").innerText(), { timeout: WAIT_MS }).toBe("ACTIVE")
    await page.getByLabel("Plan of Globex", { exact: true }).selectOption("SCALE")
    await row.getByRole("button", { name: "Change the plan of Globex" }).click()
    await expect.poll(async () => (await accountNamed(env.node, "Globex"))?.plan, { timeout: WAIT_MS }).toBe("SCALE")
    await docsScreenshot(browser(), page, "accounts")
    await row.getByRole("button", { name: "Suspend Globex" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Suspend" }).click()
    await expect.poll(() => row.locator("td[data-label=\"Status\"]").innerText(), { timeout: WAIT_MS }).toBe("SUSPENDED")

    await page.getByRole("link", { name: "Networks" }).click()
    await heading(page, "Networks")
    const net = page.locator("tr", { hasText: env.networkId })
    await expect.poll(() => net.locator("td[data-label=\"State\"]").innerText(), { timeout: WAIT_MS }).toBe("up")
    expect(await net.locator("td[data-label=\"Leader\"]").innerText()).toMatch(/^this node\s+leader: batches, sends, watches$/)
    expect(await net.locator("td[data-label=\"Endpoint\"]").innerText()).toBe("up")
    expect(Number(await net.locator("td[data-label=\"Head\"]").innerText())).toBeGreaterThan(0)
    expect(await net.locator("td[data-label=\"Signer\"]").innerText()).toMatch(/^0x[0-9a-fA-F]{40}\s+\d+(\.\d+)? ETH$/)
    expect(await net.locator("td[data-label=\"Confirmation lag\"]").innerText()).toBe("nothing waiting")
    await docsScreenshot(browser(), page, "networks")
    // A network another node leads, as the page shows it: what this node does not know says "unknown".
    // (The lock lookup itself runs against PostgreSQL in test/console/leader.test.ts; here the answer is held up.)
    const real = (await pageFetch(page, "/console/api/networks", { method: "GET" })).json
    expect(real.data.networks[0]).toMatchObject({ ledBy: "this-node", leaderAddress: null, leaderSince: null, rpc: "up" })
    await page.route((url) => url.pathname === "/console/api/networks", (route) =>
      route.fulfill({
        status: 200,
        contentType: "application/json",
        body: JSON.stringify({
          ...real,
          data: {
            networks: [{
              ...real.data.networks[0],
              leader: false,
              ledBy: "another-node",
              leaderAddress: "10.0.0.7",
              leaderSince: "2026-01-02T03:04:05.000Z",
              rpc: "unknown",
              status: "follower",
              head: null
            }]
          }
        })
      }))
    await page.reload()
    await heading(page, "Networks")
    expect(await net.locator("td[data-label=\"Leader\"]").innerText()).toMatch(
      /^another node\s+10\.0\.0\.7, since 2026-01-02 03:04:05 UTC at the latest; this node follows$/
    )
    expect(await net.locator("td[data-label=\"Endpoint\"]").innerText()).toBe("unknown")
    expect(await net.locator("td[data-label=\"Head\"]").innerText()).toBe("unknown")
    await page.unroute((url) => url.pathname === "/console/api/networks")
    // An account without members (Globex): the Members page says so instead of bare column headers.
    const globex = (await accountNamed(env.node, "Globex"))!
    await go(page, `#/a/${globex.id}/members`, "Members")
    expect(await page.locator("#no-members").innerText()).toBe("No member yet: nobody signs in to this account. Invite its first admin above.")
    expect(await page.locator("table", { has: page.locator("caption", { hasText: /^Members$/ }) }).count()).toBe(0)
    // Operators open any account's pages. At 1280 px the sections (8 for an operator on an account page) stay on one line.
    await page.setViewportSize({ width: 1280, height: 800 })
    await go(page, acct("overview"), "Overview — Acme Records")
    const tops = await page.locator("#top .nav a").evaluateAll((links) => links.map((a) => Math.round((a as any).getBoundingClientRect().top)))
    expect(tops).toHaveLength(8)
    expect(new Set(tops).size).toBe(1)
    // Members cannot see the operators' pages.
    const admin = await signedInAs(ADMIN)
    const list = await pageFetch(admin, "/console/api/accounts", { method: "GET" })
    expect([list.status, list.json.error]).toEqual([403, "Only operators can do this."])
    await Promise.all([page.context().close(), admin.context().close()])
  })

  it("every page fits 360 px, has labelled controls and a heading that takes the focus; the overview shows usage and status counts", async () => {
    const page = await signedInAs(ADMIN, { width: 360, height: 740 })
    const pages: Array<[string, string | RegExp]> = [
      [acct("overview"), "Overview — Acme Records"],
      [acct("records"), "Records"],
      [acct(`records/${evmIds[0]}`), `Record ${evmIds[0]}`],
      [acct("deliveries"), "Deliveries"],
      [acct("requests"), "Requests"],
      [acct("webhooks"), "Webhooks"],
      [acct("keys"), "Settings › API keys"],
      [acct("members"), "Members"]
    ]
    for (const [hash, title] of pages) {
      await go(page, hash, title)
      expect(await scrollWidth(page), hash).toBeLessThanOrEqual(360)
      expect(await unlabelledControls(page), hash).toEqual([])
      expect(await page.evaluate(() => (globalThis as any).document.activeElement?.tagName), hash).toBe("H1")
    }
    await go(page, acct("overview"), "Overview — Acme Records")
    const overview = (await page.locator("main").innerText()).replace(/\s+/g, " ")
    expect(overview).toMatch(/\d+ records this month \(unlimited plan\)/)
    const anchored = (await call(base, "GET", "/v1/records?status=ANCHORED&limit=100", { key: apiKey })).json.data.records.length
    expect(overview).toContain(`QUEUED 1 BATCHING 0 ANCHORED ${anchored} FAILED 0 DELETED 0`)
    expect(await page.locator("svg.chart rect.bar").count()).toBeGreaterThanOrEqual(28)
    expect(await page.locator("svg.chart title").first().textContent()).toMatch(/^Records created per day in \d{4}-\d{2}: /)
    // A scale: records per day on the left from 0 to a round top (1, 2 or 5 × 10^k, at or above the busiest day), days below.
    const ticks = (await page.locator("svg.chart text.y-tick").allTextContents()).map(Number)
    const busiest = Math.max(...(await page.locator("svg.chart rect.bar title").allTextContents()).map((t) => Number(t.split(": ")[1])))
    expect(ticks[0]).toBe(0)
    expect(ticks.at(-1)).toBeGreaterThanOrEqual(busiest)
    expect(String(ticks.at(-1))).toMatch(/^[125]0*$/)
    expect(await page.locator("svg.chart text.x-tick").first().textContent()).toBe("1")
    expect(await page.locator("svg.chart text.x-label").textContent()).toMatch(/^day of \d{4}-\d{2}/)
    await docsScreenshot(browser(), page, "overview-360px")
    // By keyboard: back from the heading through the header's controls to the skip link, which leads to the content.
    const active = () => page.evaluate(() => (globalThis as any).document.activeElement?.textContent as string)
    const path: Array<string> = []
    for (let i = 0; i < 15 && (await active()) !== "Skip to content"; i++) {
      await page.keyboard.press("Shift+Tab")
      path.push((await active()).trim())
    }
    expect(path.at(-1)).toBe("Skip to content")
    expect(path).toEqual(expect.arrayContaining(["Sign out everywhere", "Sign out", "Members", "API keys", "Overview", "anchord console"]))
    const route = page.url()
    await page.keyboard.press("Enter")
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("main")
    expect(page.url()).toBe(route) // the skip link is not a route
    await heading(page, "Overview — Acme Records")
    await page.context().close()

    const wide = await signedInAs(ADMIN, { width: 1280, height: 800 })
    await go(wide, acct("overview"), "Overview — Acme Records")
    // At 1280 px a member's header is one line: sections, environment, who, sign out.
    const lineOf = (selector: string) =>
      wide.locator(selector).evaluateAll((es) =>
        es.map((e) => {
          const r = (e as any).getBoundingClientRect()
          return Math.round(r.top + r.height / 2)
        })
      )
    const middles = [...await lineOf("#top .nav a"), ...await lineOf("#top .who > *")]
    expect(Math.max(...middles) - Math.min(...middles), JSON.stringify(middles)).toBeLessThan(12)
    expect(await wide.locator("#top .user").getAttribute("title")).toBe("admin@example.com (admin of Acme Records)")
    await docsScreenshot(browser(), wide, "overview")
    await wide.context().close()
  })

  it("a page that answers late never replaces the page the user went to next", async () => {
    const page = await signedInAs(ADMIN)
    await go(page, acct("overview"), "Overview — Acme Records")
    // The records list's answer is held until the user has moved on to the webhooks page.
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    await page.route((url) => url.pathname.endsWith(`/accounts/${accountId}/records`), async (route) => {
      await held
      await route.continue()
    })
    const late = page.waitForEvent("requestfinished", { predicate: (r) => new URL(r.url()).pathname.endsWith("/records"), timeout: WAIT_MS })
    await page.goto(`${base}/console/${acct("records")}`)
    await go(page, acct("webhooks"), "Webhooks")
    release()
    await late
    // Let the late answer's page be built (its body is in; what is left is the page's own script).
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 50)))
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Webhooks")
    expect(await page.title()).toBe("Webhooks · anchord console")
    await page.context().close()
  })

  it("an expired session sends the user back to sign-in with the reason, and back to their page after", async () => {
    const page = await signedInAs(ADMIN)
    await go(page, acct("deliveries"), "Deliveries")
    // 31 minutes later on the node's clock: idle for longer than the 30-minute limit.
    env.clock.shift(31 * 60_000)
    await page.getByRole("link", { name: "Records" }).click()
    await heading(page, "Sign in to the console")
    expect(await page.getByRole("status").first().textContent()).toBe("Your session ended after a period of inactivity: sign in again.")
    await signIn(page, base, ADMIN.email, ADMIN.password)
    await heading(page, "Records")
    await page.context().close()
  })
})
