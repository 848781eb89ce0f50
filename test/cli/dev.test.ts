/**
 * `npm start` = `anchord dev`: embedded PostgreSQL under the data directory, an active test account
 * created once, the same dev key printed at every start, and every record kept across restarts —
 * including after the node was killed with SIGKILL (its PostgreSQL is adopted, not started twice).
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, isPortFree } from "../../src/dev/EmbeddedPostgres.ts"
import { openCheckpoint } from "../../src/tlog/checkpoint.ts"
import { parseVerifierKey } from "../../src/tlog/note.ts"
import { call } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"
import { forwardOutput, track } from "../support/process.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-dev-"))
Fs.chmodSync(dataDir, 0o755)

const startDev = async (port: number) => {
  const child = track(ChildProcess.spawn(process.execPath, [Path.join(root, "src/cli/main.ts"), "dev"], {
    cwd: root,
    // WEBHOOK_ALLOW_PRIVATE left out: dev's own default (loopback) is under test.
    env: { ...process.env, ANCHORD_DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: "", DEV_CHAIN_PORT: "0", DEV_FABRIC_PORT: "0", EVM_NETWORKS: "",
      WEBHOOK_ALLOW_PRIVATE: undefined },
    stdio: ["ignore", "pipe", "pipe"]
  }))
  forwardOutput(child, "anchord dev")
  let out = ""
  child.stdout.on("data", (d) => out += d)
  child.stderr.on("data", (d) => out += d)
  const until = Date.now() + 90_000
  while (!/Test key:\s+dcp_test_\w{32}/.test(out) || !/listening/.test(out)) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`anchord dev did not start:\n${out}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  while (true) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/v1/health`)).ok) break
    } catch {}
    if (Date.now() > until || child.exitCode !== null) throw new Error(`anchord dev did not answer:\n${out}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return { child, key: /Test key:\s+(dcp_test_\w{32})/.exec(out)![1], output: () => out }
}

const stop = (child: ChildProcess.ChildProcess, signal: NodeJS.Signals) => {
  const exited = new Promise((r) => child.once("exit", r))
  child.kill(signal)
  return exited
}

describe("anchord dev", () => {
  afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

  it("prints a working key, keeps it and every record across restarts, survives SIGKILL", async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const first = await startDev(port)
    expect(first.output()).toContain(`${base}/v1`)
    const created = await call(base, "POST", "/v1/anchor", { key: first.key, body: { data: { dev: 1 } } })
    expect(created.status).toBe(202)
    // The console and the verify page, and a one-time sign-in link for the dev operator.
    expect(first.output()).toContain(`Console:   ${base}/console`)
    expect(first.output()).toContain(`Verify:    ${base}/verify`)
    const link = new RegExp(`Sign in:\\s+${base.replace(/[.]/g, "\\.")}/console/#/link/([A-Za-z0-9_-]{43})`).exec(first.output())
    expect(link, "a sign-in link in the banner").not.toBeNull()
    const redeemed = await call(base, "POST", "/console/api/links/redeem", { body: { token: link![1] } })
    expect(redeemed.status).toBe(200)
    expect(redeemed.json.data.user).toMatchObject({ email: "dev@anchord.local", operator: true })
    expect((await call(base, "POST", "/console/api/links/redeem", { body: { token: link![1] } })).json.errorCode).toBe("INVALID_LINK")
    expect((await fetch(`${base}/console`)).status).toBe(200)
    for (const icon of ["/console/favicon.svg", "/verify/favicon.svg"]) {
      const r = await fetch(`${base}${icon}`)
      expect([r.status, r.headers.get("content-type")], icon).toEqual([200, "image/svg+xml"])
    }
    // The CLI beside it, with neither PORT nor PUBLIC_URL: its one-time link names the running node's address.
    const cliLink = JSON.parse(
      ChildProcess.execFileSync(process.execPath, [Path.join(root, "src/cli/main.ts"), "users", "sign-in-link", "dev@anchord.local", "--json"], {
        cwd: root,
        env: { ...process.env, ANCHORD_DATA_DIR: dataDir, DATABASE_URL: "", PORT: undefined, PUBLIC_URL: undefined, HOST: undefined },
        encoding: "utf8"
      })
    )
    expect(cliLink.url).toMatch(new RegExp(`^${base.replace(/[.]/g, "\\.")}/console/#/link/[A-Za-z0-9_-]{43}$`))
    expect((await call(base, "POST", "/console/api/links/redeem", { body: { token: cliLink.url.split("/").pop() } })).status).toBe(200)
    // Webhooks to the developer's own machine: loopback opened, and said so in the banner.
    expect(first.output()).toContain("Webhooks:  to public addresses and 127.0.0.0/8, ::1, localhost  (WEBHOOK_ALLOW_PRIVATE)")
    expect((await call(base, "POST", "/v1/anchor", { key: first.key, body: { data: { dev: 2 }, webhookUrl: "http://127.0.0.1:9/hook" } })).status).toBe(202)
    expect((await call(base, "POST", "/v1/anchor", { key: first.key, body: { data: { dev: 3 }, webhookUrl: "http://0.0.0.0:9/hook" } })).json.errorCode)
      .toBe("INVALID_WEBHOOK_URL")
    const verifyConfig: any = await (await fetch(`${base}/verify/config.json`)).json()
    expect(verifyConfig.networks).toEqual([expect.objectContaining({ networkId: "hardhat-local", chainId: 31337 })])
    // The dev TSA (docs/timestamping.md): openssl's query, the key as the Basic password, openssl verifies against the printed CA.
    const caFile = new RegExp(`TSA:\\s+${base.replace(/[.]/g, "\\.")}/tsa  \\(RFC 3161; dev root CA (\\S+),`).exec(first.output())?.[1]
    expect(caFile, "the dev TSA's CA in the banner").toBeDefined()
    const caPem = Fs.readFileSync(caFile!, "utf8")
    const tsq = Path.join(dataDir, "dev.tsq")
    ChildProcess.execFileSync("openssl", ["ts", "-query", "-data", caFile!, "-sha256", "-cert", "-out", tsq])
    const reply = await fetch(`${base}/tsa`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`tsa:${first.key}`).toString("base64")}`, "content-type": "application/timestamp-query" },
      body: Fs.readFileSync(tsq)
    })
    expect(reply.status).toBe(200)
    Fs.writeFileSync(Path.join(dataDir, "dev.tsr"), new Uint8Array(await reply.arrayBuffer()))
    ChildProcess.execFileSync("openssl", ["ts", "-verify", "-data", caFile!, "-in", Path.join(dataDir, "dev.tsr"), "-CAfile", caFile!], { stdio: "pipe" })
    // The dev chain's transparency log (docs/transparency-log.md): its checkpoint URL and verifier key in the
    // banner, served to anyone (LOG_PUBLIC defaults to true in dev), signed by the printed key once a batch lands.
    const logUrl = `${base}/log/hardhat-local/checkpoint`
    expect(first.output()).toContain(`Log:       ${logUrl}  (C2SP tlog-tiles`)
    const logKey = /Log key:\s+(\S+)/.exec(first.output())?.[1]
    expect(logKey).toMatch(new RegExp(`^localhost:${port}/log/hardhat-local\\+[0-9a-f]{8}\\+`))
    const note = await waitFor("a signed checkpoint served", async () => {
      const r = await fetch(logUrl)
      return r.status === 200 ? r.text() : undefined
    }, 30_000)
    const verifier = parseVerifierKey(logKey!)
    expect(verifier._tag).toBe("Success")
    const opened = openCheckpoint(note, `localhost:${port}/log/hardhat-local`, [(verifier as { success: any }).success])
    expect(opened._tag, note).toBe("Success")
    await stop(first.child, "SIGKILL")

    const second = await startDev(port)
    expect(second.key).toBe(first.key)
    const again = await call(base, "GET", `/v1/records/${created.json.data.recordId}`, { key: second.key })
    expect(again.status).toBe(200)
    expect(again.json.data.hash).toBe(created.json.data.hash)
    const pgPort = Number(Fs.readFileSync(Path.join(dataDir, "pg.port"), "utf8"))
    await stop(second.child, "SIGTERM")
    expect(second.child.signalCode).toBeNull() // it shut down by itself (runMain exits 130 when interrupted)
    expect(await isPortFree(pgPort)).toBe(true)

    const third = await startDev(port)
    expect(third.key).toBe(first.key)
    // Two records and the time-stamp token's hash-only record, all kept; the dev TSA CA reused, not remade.
    expect((await call(base, "GET", "/v1/records", { key: third.key })).json.data.records).toHaveLength(3)
    expect(third.output()).toContain(`dev root CA ${caFile}`)
    expect(third.output(), "the dev log key kept").toContain(`Log key:   ${logKey}`)
    expect(Fs.readFileSync(caFile!, "utf8")).toBe(caPem)
    await stop(third.child, "SIGTERM")
  }, 180_000) // three starts of a whole dev node (PostgreSQL, chain, Fabric peer) on a loaded 2-core machine
})
