/** The operator CLI (`anchord accounts|keys|migrate`) as a user runs it: real processes, a real database. */
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { logRun } from "../support/process.ts"

const root = Path.resolve(import.meta.dirname, "../..")

// Every step is a CLI process (well under a second each on a quiet machine, ~9 s with both cores
// busy): a test of up to 8 of them gets 4 minutes.
describe("anchord accounts / keys", { timeout: 240_000 }, () => {
  let databaseUrl: string
  let node: TestNode
  // Asynchronous: a synchronous spawn froze this worker, and the node it runs in process, for as long
  // as each CLI run took; a test that timed out then blocked the next one's database connection.
  const anchord = (...args: Array<string>) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      ChildProcess.execFile(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], {
        cwd: root,
        env: { ...process.env, DATABASE_URL: databaseUrl },
        encoding: "utf8"
      }, (error, stdout, stderr) => {
        const result = { status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }
        logRun(`anchord ${args.join(" ")}`, result)
        resolve(result)
      })
    })
  const json = async (...args: Array<string>) => {
    const r = await anchord(...args, "--json")
    expect(r.status, r.stderr).toBe(0)
    return JSON.parse(r.stdout)
  }

  beforeAll(async () => {
    databaseUrl = await freshDatabase()
    expect((await anchord("migrate")).stdout).toContain("migrations applied")
    node = await startNode({ databaseUrl })
  })
  afterAll(() => node.stop())

  it("an account starts PENDING; keys only after activation; the key is shown once and works", async () => {
    const account = await json("accounts", "create", "Acme Ltd", "--plan", "STARTUP", "--email", "ops@acme.example")
    expect(account).toMatchObject({ name: "Acme Ltd", plan: "STARTUP", status: "PENDING", email: "ops@acme.example" })
    expect(account.id).toMatch(/^acct_[0-9a-f]{16}$/)

    const refused = await anchord("keys", "create", account.id)
    expect(refused.status).not.toBe(0)
    expect(refused.stdout + refused.stderr).toMatch(/not active/)

    expect((await json("accounts", "activate", account.id)).status).toBe("ACTIVE")
    const created = await json("keys", "create", account.id, "--env", "live", "--name", "prod")
    expect(created.key).toMatch(/^dcp_live_[A-Za-z0-9]{32}$/)
    expect(created.environment).toBe("live")

    const listed = await json("keys", "list", account.id)
    expect(listed).toHaveLength(1)
    expect(JSON.stringify(listed)).not.toContain(created.key.slice(9))
    expect(listed[0].display).toBe(`${created.key.slice(0, 13)}…${created.key.slice(-4)}`)
    const text = (await anchord("keys", "list", account.id)).stdout
    expect(text).toContain(created.id)
    expect(text).toContain("active")

    const ok = await call(node.baseUrl, "GET", "/v1/usage", { key: created.key })
    expect(ok.status).toBe(200)
    expect(ok.json.data).toMatchObject({ plan: "STARTUP", environment: "live", accountId: account.id })

    expect((await json("keys", "revoke", created.id)).revokedAt).not.toBeNull()
    expectError(await call(node.baseUrl, "GET", "/v1/usage", { key: created.key }), 401, "EXPIRED_API_KEY", /revoked/)
    expect((await anchord("keys", "list", account.id)).stdout).toContain("revoked")
  })

  it("expiring keys, ENTERPRISE limits, and lists", async () => {
    const ent = await json("accounts", "create", "Big Co", "--plan", "ENTERPRISE", "--rate-per-second", "2500", "--activate")
    expect(ent).toMatchObject({ status: "ACTIVE", plan: "ENTERPRISE", ratePerSecond: 2500 })
    const key = await json("keys", "create", ent.id, "--expires-in-days", "30")
    const rows = await query<{ expires_at: Date }>(databaseUrl, "SELECT expires_at FROM api_keys WHERE id = $1", [key.id])
    expect(rows[0].expires_at.getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000)
    const r = await call(node.baseUrl, "GET", "/v1/usage", { key: key.key })
    expect(r.headers.get("x-ratelimit-limit")).toBe("2500")
    expect(r.headers.get("x-quota-limit")).toBe("unlimited")
    const accounts = await json("accounts", "list")
    expect(accounts.map((a: { name: string }) => a.name)).toEqual(expect.arrayContaining(["Acme Ltd", "Big Co"]))
  })

  it("console users: invitations and sign-in links printed once, users listed; accounts suspended and moved to another plan", async () => {
    const account = await json("accounts", "create", "Console Co", "--activate")
    const invite = await json("users", "invite", account.id, "--email", "Owner@Example.com", "--role", "admin")
    expect(invite.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/console\/#\/invite\/[A-Za-z0-9_-]{43}$/)
    const token = invite.url.split("/").at(-1)
    const accepted = await call(node.baseUrl, "POST", "/console/api/invitations/accept", { body: { token, password: "a long passphrase" } })
    expect(accepted.status).toBe(200)
    // Emails are kept in their one spelling (NFKC, lower case: docs/console.md).
    expect(accepted.json.data.user).toMatchObject({ email: "owner@example.com", role: "admin", accountId: account.id, accountName: "Console Co" })
    const users = await json("users", "list", account.id)
    expect(users.map((u: { email: string; role: string }) => [u.email, u.role])).toEqual([["owner@example.com", "admin"]])
    expect(JSON.stringify(users)).not.toContain("scrypt")
    // Inviting someone who has a user is refused; a sign-in link signs them in once.
    const twice = await anchord("users", "invite", account.id, "--email", "OWNER@example.com")
    expect([twice.status, twice.stderr.trim()]).toEqual([1, "error: owner@example.com already has a console user"])
    const signIn = await json("users", "sign-in-link", "Owner@Example.COM")
    const redeemed = await call(node.baseUrl, "POST", "/console/api/links/redeem", { body: { token: signIn.url.split("/").at(-1) } })
    expect(redeemed.json.data.user.email).toBe("owner@example.com")

    expect((await json("accounts", "plan", account.id, "SCALE")).plan).toBe("SCALE")
    expect((await json("accounts", "suspend", account.id)).status).toBe("SUSPENDED")
  })

  it("bad input is refused with a clear message and changes nothing", async () => {
    const before = await query<{ n: string }>(databaseUrl, "SELECT count(*) AS n FROM accounts")
    const badPlan = await anchord("accounts", "create", "X", "--plan", "GOLD")
    expect(badPlan.status).not.toBe(0)
    expect(badPlan.stdout + badPlan.stderr).toMatch(/plan/i)
    const unknown = await anchord("accounts", "activate", "acct_0000000000000000")
    expect(unknown.status).not.toBe(0)
    expect(unknown.stdout + unknown.stderr).toMatch(/no account acct_0000000000000000/)
    const noKey = await anchord("keys", "revoke", "key_nope")
    expect(noKey.status).not.toBe(0)
    expect(noKey.stdout + noKey.stderr).toMatch(/no API key key_nope/)
    const after = await query<{ n: string }>(databaseUrl, "SELECT count(*) AS n FROM accounts")
    expect(after[0].n).toBe(before[0].n)
  })
})
