/**
 * Fixed origins (issue 23, finding 10): links the node hands out (the console's `publicUrl` and
 * verify address, invitation links; certificates' QR codes: test/certificates/certificate.test.ts)
 * use PUBLIC_URL, else the listener's http://HOST:PORT, and never the request's Host header; and
 * `anchord start` refuses to start without PUBLIC_URL on a HOST other than loopback.
 *   npx vitest run test/http/origins.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import * as Path from "node:path"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hashPassword } from "../../src/console/passwords.ts"
import { ConsoleUsers } from "../../src/console/Users.ts"
import { listenerUrl, publicUrlRefusal } from "../../src/http/publicUrl.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { logRun } from "../support/process.ts"

/** A request with a Host header of our choosing (fetch does not let one set it), to the node on loopback. */
const rawRequest = (baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  new Promise<{ status: number; headers: Http.IncomingHttpHeaders; json: any }>((resolve, reject) => {
    const url = new URL(baseUrl)
    const text = body === undefined ? undefined : JSON.stringify(body)
    const request = Http.request({
      host: url.hostname,
      port: url.port,
      method,
      path,
      headers: { ...headers, ...(text === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(text) }) }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (c: Buffer) => chunks.push(c))
      response.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8")
        resolve({ status: response.statusCode!, headers: response.headers, json: raw === "" ? undefined : JSON.parse(raw) })
      })
    })
    request.on("error", reject)
    request.end(text)
  })

const HOSTILE = { host: "evil.example:8443", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" }

/** An operator signed in over the console's API: its cookie and CSRF token. */
const operatorSession = async (node: TestNode) => {
  const email = `operator-${Math.random().toString(36).slice(2)}@example.com`
  const passwordHash = await hashPassword("a fine passphrase")
  await node.runtime.runPromise(Effect.flatMap(ConsoleUsers, (users) => users.create({ email, passwordHash, operator: true })))
  const r = await rawRequest(node.baseUrl, "POST", "/console/api/session", HOSTILE, { email, password: "a fine passphrase" })
  expect(r.status).toBe(200)
  const cookie = String(r.headers["set-cookie"]?.[0]).split(";")[0]!
  return { cookie, csrf: r.json.data.csrfToken as string }
}

describe.each([
  ["without PUBLIC_URL: the listener's http://HOST:PORT", undefined],
  ["with PUBLIC_URL", "https://anchord.example.com"]
])("links %s, whatever the Host header says", (_, publicUrl) => {
  let node: TestNode
  let base = ""
  beforeAll(async () => {
    node = await startNode({ config: publicUrl === undefined ? {} : { baseUrl: Option.some(`${publicUrl}/`) } })
    base = publicUrl ?? node.baseUrl
  })
  afterAll(() => node?.stop())

  it("the console's publicUrl and verify address, and an invitation link", async () => {
    const session = await operatorSession(node)
    const config = await rawRequest(node.baseUrl, "GET", "/console/api/config", { ...HOSTILE, cookie: session.cookie })
    expect(config.status).toBe(200)
    expect(config.json.data.publicUrl).toBe(base)
    expect(config.json.data.verifyUrl).toBe(`${base}/verify`)

    const accountId = await node.createAccount()
    const invite = await rawRequest(node.baseUrl, "POST", `/console/api/accounts/${accountId}/members/invite`, { ...HOSTILE, cookie: session.cookie,
      "x-csrf-token": session.csrf }, { email: "new-member@example.com", role: "viewer" })
    expect(invite.status).toBe(200)
    expect(invite.json.data.url.startsWith(`${base}/console/#/invite/`)).toBe(true)
    expect(JSON.stringify([config.json, invite.json])).not.toMatch(/evil/)
  })
})

describe("anchord start and PUBLIC_URL", () => {
  it("the rule: required unless HOST is a loopback address", () => {
    for (const host of ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"]) {
      expect(publicUrlRefusal({ host, baseUrl: Option.none() }), host).toBeUndefined()
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "192.168.1.10", "anchord.internal", "2001:db8::1"]) {
      expect(publicUrlRefusal({ host, baseUrl: Option.none() }), host).toMatch(/^PUBLIC_URL is required when HOST \(.*\) is not a loopback address/)
      expect(publicUrlRefusal({ host, baseUrl: Option.some("https://anchord.example.com") }), host).toBeUndefined()
    }
    expect(listenerUrl("::1", 8080)).toBe("http://[::1]:8080")
    expect(listenerUrl("127.0.0.1", 8080)).toBe("http://127.0.0.1:8080")
  })

  it("refuses to start on HOST=0.0.0.0 without PUBLIC_URL, saying why (nothing listens)", () => {
    const root = Path.resolve(import.meta.dirname, "../..")
    const env: Record<string, string | undefined> = { ...process.env, HOST: "0.0.0.0" }
    delete env.PUBLIC_URL
    delete env.PORT
    // The refusal comes before the database is opened: a DATABASE_URL nothing listens on proves it.
    env.DATABASE_URL = "postgres://nobody@127.0.0.1:1/none"
    const result = ChildProcess.spawnSync(process.execPath, [Path.join(root, "src/cli/main.ts"), "start"], {
      cwd: root,
      env,
      encoding: "utf8",
      timeout: 60_000
    })
    logRun("anchord start (HOST=0.0.0.0, no PUBLIC_URL)", result)
    expect(result.status).toBe(1)
    expect(result.stderr).toMatch(/error: PUBLIC_URL is required when HOST \(0\.0\.0\.0\) is not a loopback address/)
    expect(result.stdout + result.stderr).not.toMatch(/anchord listening/)
  }, 90_000)
})
