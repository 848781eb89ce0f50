/**
 * `anchord doctor` (docs/doctor.md) as an operator runs it: a real process against a real, migrated
 * database and an Anvil chain with AnchorRegistry deployed. Green when all is well; each fatal case
 * exits 1 and says what is wrong; `anchord start` refuses to start on a fatal check. `--webhook-test-url`
 * against an HTTPS receiver of the test's own: 2xx ok, 5xx warn, refused by the egress policy fatal,
 * silent warn within 8 s.
 *   npx vitest run test/cli/doctor.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import type * as Http from "node:http"
import * as Https from "node:https"
import type * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Hex } from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { deployAnchorRegistry } from "../../src/evm/deploy.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { freshDatabase } from "../support/db.ts"
import { logRun } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"

const root = Path.resolve(import.meta.dirname, "../..")

interface Line {
  readonly check: string
  readonly status: "ok" | "warn" | "fatal"
  readonly message: string
  readonly fix: string
}

const run = (args: ReadonlyArray<string>, env: Record<string, string | undefined>) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const base = { ...process.env }
    // The runner's own settings must not leak into the configuration under test.
    for (const name of ["DATABASE_URL", "EVM_NETWORKS", "FABRIC_NETWORKS", "WEBHOOK_ALLOW_PRIVATE", "TLS_CERT_FILE", "TLS_KEY_FILE", "REDIS_URL", "PUBLIC_URL",
      "HOST"]) delete base[name]
    ChildProcess.execFile(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], {
      cwd: root,
      env: Object.fromEntries(Object.entries({ ...base, LOG_FORMAT: "json", ...env }).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv,
      encoding: "utf8",
      timeout: 120_000
    }, (error, stdout, stderr) => {
      const result = { status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }
      logRun(`anchord ${args.join(" ")}`, result)
      resolve(result)
    })
  })

const openssl = (...args: Array<string>) => ChildProcess.execFileSync("openssl", args, { stdio: "pipe" })

describe("anchord doctor", { timeout: 240_000 }, () => {
  let anvil: Anvil
  let databaseUrl: string
  let deployerKey: Hex
  let contract: Hex
  let dir: string
  const network = (over: Record<string, unknown> = {}) =>
    JSON.stringify([{ networkId: "anvil-doctor", environment: "test", rpcUrl: anvil.rpcUrl, chainId: 31337, contractAddress: contract, privateKey: deployerKey,
      ...over }])
  const doctor = async (env: Record<string, string | undefined>, ...args: Array<string>) => {
    const r = await run(["doctor", "--json", ...args], { DATABASE_URL: databaseUrl, EVM_NETWORKS: network(), ...env })
    return { ...r, lines: JSON.parse(r.stdout) as Array<Line> }
  }
  const fatalOf = (lines: ReadonlyArray<Line>) => lines.filter((l) => l.status === "fatal")

  beforeAll(async () => {
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-doctor-"))
    anvil = await startAnvil()
    deployerKey = await anvil.fundedKey()
    contract = (await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: deployerKey })).address
    databaseUrl = await freshDatabase()
    expect((await run(["migrate"], { DATABASE_URL: databaseUrl })).status).toBe(0)
    // A certificate and its key; another key; an expired certificate.
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${dir}/key.pem`, "-out", `${dir}/cert.pem`, "-subj",
      "/CN=localhost", "-days", "90")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${dir}/other.pem`)
    openssl("x509", "-x509toreq", "-in", `${dir}/cert.pem`, "-signkey", `${dir}/key.pem`, "-out", `${dir}/req.pem`)
    openssl("x509", "-req", "-in", `${dir}/req.pem`, "-signkey", `${dir}/key.pem`, "-days", "-1", "-out", `${dir}/expired.pem`)
  })
  afterAll(async () => {
    await anvil?.stop()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("is green on a sound configuration: exit 0, one {check, status, message, fix} per check", async () => {
    // A live chain has a recent block (Anvil mines only on demand: the clocks check reads the latest).
    await anvil.rpc("evm_mine")
    const r = await doctor({ TLS_CERT_FILE: `${dir}/cert.pem`, TLS_KEY_FILE: `${dir}/key.pem` })
    expect(r.status, r.stderr).toBe(0)
    expect(fatalOf(r.lines)).toEqual([])
    for (const line of r.lines) {
      expect(Object.keys(line).sort()).toEqual(["check", "fix", "message", "status"])
      expect(["ok", "warn", "fatal"]).toContain(line.status)
    }
    const byCheck = new Map(r.lines.map((l) => [l.check, l]))
    for (const name of ["database", "migrations", "durability", "evm:anvil-doctor", "evm:anvil-doctor:balance", "evm:anvil-doctor:clock", "tls",
      "webhook-egress", "public-url", "anchorable"])
    {
      expect(byCheck.get(name)?.status, name).toBe("ok")
    }
    expect(byCheck.get("anchorable")!.message).toMatch(/evm: test; fabric: none; hybrid: none/)
    // The text form: one line per check (and its fix), same exit code.
    const text = await run(["doctor"], { DATABASE_URL: databaseUrl, EVM_NETWORKS: network() })
    expect(text.status).toBe(0)
    expect(text.stdout).toMatch(/^ok\s+database\s+reachable/m)
  })

  it("an unreachable database is fatal", async () => {
    const r = await doctor({ DATABASE_URL: "postgres://anchord:x@127.0.0.1:1/anchord", DB_CONNECT_TIMEOUT_MS: "1000" })
    expect(r.status).toBe(1)
    expect(fatalOf(r.lines)).toEqual([
      expect.objectContaining({ check: "database", message: expect.stringMatching(/^unreachable/), fix: expect.stringMatching(/DATABASE_URL/) })
    ])
  })

  it("the wrong chain id, the wrong contract code, a signer without the role are fatal", async () => {
    const wrongChain = await doctor({ EVM_NETWORKS: network({ chainId: 5 }) })
    expect(wrongChain.status).toBe(1)
    expect(fatalOf(wrongChain.lines)[0]!.message).toMatch(/serves chain 31337, not 5 as configured/)

    // Some other code at an address: not this AnchorRegistry.
    const other = "0x00000000000000000000000000000000000000aa"
    await anvil.rpc("anvil_setCode", [other, "0x6080604052600080fd"])
    const wrongCode = await doctor({ EVM_NETWORKS: network({ contractAddress: other }) })
    expect(wrongCode.status).toBe(1)
    expect(fatalOf(wrongCode.lines)[0]!.message).toMatch(/is not this version's AnchorRegistry/)

    const stranger = await anvil.fundedKey()
    const noRole = await doctor({ EVM_NETWORKS: network({ privateKey: stranger }) })
    expect(noRole.status).toBe(1)
    expect(fatalOf(noRole.lines)[0]!).toMatchObject({ check: "evm:anvil-doctor", message: expect.stringMatching(/does not hold ANCHORER_ROLE/),
      fix: expect.stringMatching(/grantRole/) })
    // The key never appears, in any line.
    expect(JSON.stringify(noRole.lines)).not.toContain(stranger.slice(2))
  })

  it("a certificate with another key, an expired certificate, a bad WEBHOOK_ALLOW_PRIVATE are fatal", async () => {
    const mismatch = await doctor({ TLS_CERT_FILE: `${dir}/cert.pem`, TLS_KEY_FILE: `${dir}/other.pem` })
    expect(mismatch.status).toBe(1)
    expect(fatalOf(mismatch.lines)).toEqual([expect.objectContaining({ check: "tls", message: expect.stringMatching(/not the key of the certificate/) })])

    const expired = await doctor({ TLS_CERT_FILE: `${dir}/expired.pem`, TLS_KEY_FILE: `${dir}/key.pem` })
    expect(expired.status).toBe(1)
    expect(fatalOf(expired.lines)).toEqual([expect.objectContaining({ check: "tls", message: expect.stringMatching(/expired on/) })])

    const policy = await doctor({ WEBHOOK_ALLOW_PRIVATE: "10.0.0.0/99" })
    expect(policy.status).toBe(1)
    expect(fatalOf(policy.lines)).toEqual([expect.objectContaining({ check: "webhook-egress", message: expect.stringMatching(/^WEBHOOK_ALLOW_PRIVATE: /) })])
  })

  it.runIf(process.getuid?.() === 0)("as root, a data directory under a parent of mode 0700 is fatal with the directory and a fix", async () => {
    // What a new user tried: ANCHORD_DATA_DIR=$(mktemp -d)/… with the node run as root (initdb's bare "Permission denied").
    const parent = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-0700-"))
    try {
      expect(Fs.statSync(parent).mode & 0o777).toBe(0o700)
      const r = await doctor({ DATABASE_URL: undefined, ANCHORD_DATA_DIR: `${parent}/data` })
      expect(r.status).toBe(1)
      expect(fatalOf(r.lines)).toEqual([expect.objectContaining({
        check: "data-dir",
        message: expect.stringContaining(`cannot enter ${parent} (mode 0700)`),
        fix: expect.stringContaining(`chmod o+x ${parent}`)
      })])
      // The node itself says the same instead of initdb's message.
      const dev = await run(["migrate"], { DATABASE_URL: undefined, ANCHORD_DATA_DIR: `${parent}/data` })
      expect(dev.status).not.toBe(0)
      expect(dev.stdout + dev.stderr).toContain(`cannot enter ${parent} (mode 0700)`)
    } finally {
      Fs.rmSync(parent, { recursive: true, force: true })
    }
  })

  it("anchord start refuses to start on a fatal check, with the same message", async () => {
    const r = await run(["start"], {
      DATABASE_URL: databaseUrl,
      EVM_NETWORKS: network(),
      PORT: "65000",
      TLS_CERT_FILE: `${dir}/expired.pem`,
      TLS_KEY_FILE: `${dir}/key.pem`
    })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/anchord doctor found 1 fatal problem/)
    expect(r.stderr).toMatch(/FATAL tls\s+the certificate expired on/)
  })
})

describe("anchord doctor --webhook-test-url", { timeout: 60_000 }, () => {
  let dir: string
  let receiver: Https.Server
  let base: string
  let databaseUrl: string
  /** Requests as they arrived; `waited`: ms from a request's arrival until the client hung up, when it did. */
  const received: Array<{ path: string; method: string; headers: Http.IncomingHttpHeaders; body: string; waited?: number }> = []
  /** doctor with only the webhook target to look at: its own database (no chain), the receiver's certificate trusted. */
  const doctor = async (url: string, env: Record<string, string | undefined> = {}) => {
    const r = await run(["doctor", "--json", "--webhook-test-url", url], { DATABASE_URL: databaseUrl, NODE_EXTRA_CA_CERTS: `${dir}/receiver.pem`, ...env })
    const lines = JSON.parse(r.stdout) as Array<Line>
    return { ...r, lines, target: lines.filter((l) => l.check === "webhook-target") }
  }
  // The receiver is on loopback: doctor tests it as a live key's URL, so only with loopback opened.
  const opened = { WEBHOOK_ALLOW_PRIVATE: "127.0.0.1" }

  beforeAll(async () => {
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-doctor-webhook-"))
    // A live key's URL must be https: a certificate for 127.0.0.1, trusted by the doctor process only.
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${dir}/receiver.key`, "-out", `${dir}/receiver.pem`,
      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2")
    // /ok answers 204, /fail 500, /silent never.
    receiver = Https.createServer({ key: Fs.readFileSync(`${dir}/receiver.key`), cert: Fs.readFileSync(`${dir}/receiver.pem`) }, (req, res) => {
      let body = ""
      req.on("data", (chunk) => body += chunk)
      req.on("end", () => {
        const request: (typeof received)[number] = { path: req.url ?? "", method: req.method ?? "", headers: req.headers, body }
        received.push(request)
        const arrived = Date.now()
        res.on("close", () => request.waited = Date.now() - arrived)
        if (req.url === "/ok") res.writeHead(204).end()
        else if (req.url === "/fail") res.writeHead(500).end("receiver broke")
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    base = `https://127.0.0.1:${(receiver.address() as Net.AddressInfo).port}`
    databaseUrl = await freshDatabase()
  })
  afterAll(async () => {
    receiver?.closeAllConnections()
    await new Promise((resolve) => receiver?.close(resolve))
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("a receiver answering 2xx: ok, after one unsigned test POST", async () => {
    const r = await doctor(`${base}/ok`, opened)
    expect(r.target).toEqual([{ check: "webhook-target", status: "ok", message: "answered 204 to an unsigned test POST", fix: "" }])
    expect(r.status, r.stderr).toBe(0)
    const posts = received.filter((p) => p.path === "/ok")
    expect(posts).toHaveLength(1)
    expect(posts[0]).toMatchObject({ method: "POST", body: JSON.stringify({ type: "doctor.test" }) })
    expect(Object.keys(posts[0]!.headers).filter((h) => h.includes("signature"))).toEqual([])
  })

  it("a receiver answering 500: warn (exit 0), check its logs", async () => {
    const r = await doctor(`${base}/fail`, opened)
    expect(r.target).toEqual([{ check: "webhook-target", status: "warn", message: "answered 500 to an unsigned test POST", fix: "check the receiver's logs" }])
    expect(r.status, r.stderr).toBe(0)
  })

  it("a private address without WEBHOOK_ALLOW_PRIVATE: fatal with the policy's reason (exit 1), nothing sent", async () => {
    const before = received.length
    const r = await doctor(`${base}/ok`)
    expect(r.target).toEqual([
      expect.objectContaining({ check: "webhook-target", status: "fatal",
        message: "the policy refuses it: webhookUrl host 127.0.0.1 is not a public address (loopback)", fix: expect.stringMatching(/WEBHOOK_ALLOW_PRIVATE/) })
    ])
    expect(r.status).toBe(1)
    expect(received.length).toBe(before)
  })

  it("a receiver that never answers: warn \"no answer\" within the documented 8 s bound (exit 0)", async () => {
    const r = await doctor(`${base}/silent`, opened)
    expect(r.target).toEqual([
      expect.objectContaining({ check: "webhook-target", status: "warn", message: "no answer within 8000 ms", fix: expect.stringMatching(/receiver is up/) })
    ])
    expect(r.status, r.stderr).toBe(0)
    // Measured at the receiver, without the process's start-up: doctor hangs up after its 8 s, not the check's 10 s backstop.
    const silent = received.filter((p) => p.path === "/silent")
    expect(silent).toHaveLength(1)
    await waitFor("the receiver sees doctor hang up", async () => silent[0]!.waited !== undefined, 5_000)
    expect(silent[0]!.waited).toBeGreaterThan(7_000)
    expect(silent[0]!.waited).toBeLessThan(10_000)
  }, 30_000)
})
