/**
 * Cross-origin use (SPEC 3) in a real browser: a page served from another origin calls the API with
 * fetch. From an origin in CORS_ORIGINS the preflights pass, the answers (errors included, those of
 * the gateway and of the ingest fast path too) are readable with their rate, quota, retry and
 * idempotency headers; from any other origin the browser refuses to hand the answer to the page.
 *   npx vitest run test/web/cors.test.ts
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { useBrowser } from "../support/browser.ts"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"

const browser = useBrowser()

/** A page server on `localhost` (another origin than the node's 127.0.0.1). */
const servePage = async () => {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>app</title><p id=p>app</p>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}

describe("CORS in a browser", () => {
  let app: Awaited<ReturnType<typeof servePage>>
  let stranger: Awaited<ReturnType<typeof servePage>>
  let node: TestNode
  let key: string
  let recordId: string

  beforeAll(async () => {
    app = await servePage()
    stranger = await servePage()
    node = await startNode({ config: { corsOrigins: [app.origin] } })
    key = (await node.createKey(await node.createAccount({ plan: "FREE" }))).key
    recordId = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { from: "setup" } } })).json.data.recordId
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await app?.close()
    await stranger?.close()
  })

  /** Runs the calls in the page and reports what the page could read. */
  const fromPage = async (origin: string) => {
    const page = await browser().newPage(undefined, "cors")
    await page.goto(`${origin}/`)
    return page.evaluate(async ({ base, key, recordId }) => {
      const read = async (path: string, init: RequestInit) => {
        try {
          const r = await fetch(`${base}${path}`, init)
          const headers: Record<string, string | null> = {}
          for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-quota-limit", "x-quota-remaining", "x-quota-reset",
            "retry-after", "idempotent-replayed", "content-type"]) headers[h] = r.headers.get(h)
          return { status: r.status, body: await r.json(), headers }
        } catch (e) {
          return { failed: String(e) }
        }
      }
      const auth = { authorization: `Bearer ${key}` }
      const json = { ...auth, "content-type": "application/json" }
      const body = JSON.stringify({ data: { from: "browser" }, collection: "web" })
      return {
        created: await read("/v1/anchor", { method: "POST", headers: { ...json, "idempotency-key": "page-1" }, body }),
        replayed: await read("/v1/anchor", { method: "POST", headers: { ...json, "idempotency-key": "page-1" }, body }),
        got: await read(`/v1/records/${recordId}`, { headers: auth }),
        patched: await read(`/v1/records/${recordId}`, { method: "PATCH", headers: json, body: JSON.stringify({ metadata: { by: "page" } }) }),
        unauthorized: await read("/v1/anchor", { method: "POST", headers: { "content-type": "application/json" }, body }),
        notFound: await read("/v1/nowhere", { headers: auth }),
        notAllowed: await read("/v1/usage", { method: "DELETE", headers: auth }),
        health: await read("/v1/health", {})
      }
    }, { base: node.baseUrl, key, recordId })
  }

  it("an allowed origin reads every answer and the exposed headers", async () => {
    const r = await fromPage(app.origin) as Record<string, any>
    expect(r.created.status).toBe(202)
    expect(r.created.body.data.collection).toBe("web")
    expect(r.created.headers["x-quota-limit"]).toBe("1000")
    expect(r.created.headers["x-quota-remaining"]).toMatch(/^\d+$/)
    expect(r.created.headers["x-quota-reset"]).toMatch(/^\d+$/)
    expect(r.replayed.status).toBe(202)
    expect(r.replayed.headers["idempotent-replayed"]).toBe("true")
    expect(r.got.status).toBe(200)
    expect(r.patched.status).toBe(200)
    expect(r.patched.body.data.metadata).toEqual({ by: "page" })
    expect([r.unauthorized.status, r.notFound.status, r.notAllowed.status]).toEqual([401, 404, 405])
    expect(r.unauthorized.body).toEqual({ success: false, error: expect.any(String), errorCode: "MISSING_API_KEY" })
    expect(r.notFound.body.errorCode).toBe("NOT_FOUND")
    expect(r.health.status).toBe(200)
    for (const name of ["created", "replayed", "got", "patched", "unauthorized", "notFound", "notAllowed", "health"]) {
      for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) expect(r[name].headers[h], `${name} ${h}`).toMatch(/^\d+$/)
    }
  })

  it("a FREE key past its per-second limit: the page reads the 429 and its Retry-After", async () => {
    const page = await browser().newPage(undefined, "cors-429")
    await page.goto(`${app.origin}/`)
    const limited = await page.evaluate(async ({ base, key }) => {
      // FREE: 10 per second; the 11th request of one window is refused.
      for (let i = 0; i < 40; i++) {
        const r = await fetch(`${base}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
        if (r.status === 429) return { status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.json() }
      }
      return undefined
    }, { base: node.baseUrl, key })
    expect(limited).toMatchObject({ status: 429, body: { errorCode: "RATE_LIMIT_EXCEEDED" } })
    expect(limited!.retryAfter).toMatch(/^\d+$/)
  })

  it("another origin gets nothing: the browser refuses, and the node created nothing for it", async () => {
    // Counted in the database: the FREE key may still be over its per-second limit from the test before.
    const count = async () => (await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM records WHERE collection = 'web'"))[0].n
    const before = await count()
    const r = await fromPage(stranger.origin) as Record<string, any>
    for (const name of ["created", "got", "unauthorized", "notFound", "health"]) expect(r[name].failed, name).toMatch(/Failed to fetch/)
    // The POST needs a preflight, which the node answered without a grant: it was never sent.
    expect(await count()).toBe(before)
  })
})
