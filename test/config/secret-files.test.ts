// Secrets from files (docs/operating.md, "Secrets from files"): every secret variable has a _FILE
// variant; both set is refused, an unreadable file is a start error naming the variable and never the
// content; and `anchord start` with its secrets in files prints none of them.
//   npx vitest run test/config/secret-files.test.ts
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../src/config.ts"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { adminUrl, freshDatabase, query } from "../support/db.ts"
import { forwardOutput, track } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-secrets-"))
afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))
const file = (name: string, content: string) => {
  const path = Path.join(dir, name)
  Fs.writeFileSync(path, content, { mode: 0o600 })
  return path
}

const appConfig = (env: Record<string, string>) => Effect.runPromise(AppConfig.config.parse(ConfigProvider.fromUnknown(env)))
const appConfigError = (env: Record<string, string>) => appConfig(env).then(() => "no error", (e) => String(e))
const evm = (env: Record<string, string>) =>
  Effect.runPromise(Effect.gen(function*() {
    return (yield* EvmNetworks).networks
  }).pipe(
    Effect.provide(EvmNetworks.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))))
  ))
const evmError = (env: Record<string, string>) => evm(env).then(() => "no error", (e) => String(e))

const KEY = "0x" + "5e".repeat(32)
const base = { rpcUrl: "http://127.0.0.1:1/v3/RPCSECRET", chainId: 31337, contractAddress: "0x" + "ab".repeat(20) }

describe("<NAME>_FILE", () => {
  it("DATABASE_URL_FILE and REDIS_URL_FILE: the file's content, one trailing newline dropped", async () => {
    const c = await appConfig({
      DATABASE_URL_FILE: file("db", "postgres://u:DBSECRET@127.0.0.1:5/x\n"),
      REDIS_URL_FILE: file("redis", "redis://:REDISSECRET@127.0.0.1:6\r\n")
    })
    expect(Option.map(c.databaseUrl, Redacted.value)).toEqual(Option.some("postgres://u:DBSECRET@127.0.0.1:5/x"))
    expect(Option.map(c.redisUrl, Redacted.value)).toEqual(Option.some("redis://:REDISSECRET@127.0.0.1:6"))
    expect(String(c.databaseUrl)).not.toContain("DBSECRET")
    // The variable itself still works, and neither is still none.
    expect(Option.map((await appConfig({ DATABASE_URL: "postgres://a@b/c" })).databaseUrl, Redacted.value)).toEqual(Option.some("postgres://a@b/c"))
    expect(Option.isNone((await appConfig({})).databaseUrl)).toBe(true)
  })

  it("both set, an unreadable or an empty file: a start error naming the variable, never the content", async () => {
    const both = await appConfigError({ DATABASE_URL: "postgres://u:DBSECRET@h/x", DATABASE_URL_FILE: file("db2", "postgres://u:DBSECRET@h/x") })
    expect(both).toContain("DATABASE_URL and DATABASE_URL_FILE are both set")
    expect(both).not.toContain("DBSECRET")
    // `NAME=` left empty in an env file is not a second value.
    expect(Option.map((await appConfig({ DATABASE_URL: "", DATABASE_URL_FILE: file("db3", "postgres://a@b/c") })).databaseUrl, Redacted.value))
      .toEqual(Option.some("postgres://a@b/c"))
    const missing = await appConfigError({ REDIS_URL_FILE: Path.join(dir, "nope") })
    expect(missing).toMatch(/REDIS_URL_FILE: cannot read ".*nope" \(ENOENT\)/)
    expect(await appConfigError({ DATABASE_URL_FILE: file("empty", "\n") })).toMatch(/DATABASE_URL_FILE: .* is empty/)
  })

  it("EVM_NETWORKS_FILE, EVM_PRIVATE_KEY_<ID>_FILE and the member privateKeyFile", async () => {
    const networks = file("evm.json", JSON.stringify([
      { networkId: "sepolia", ...base, privateKeyFile: file("sepolia.key", `${KEY}\n`) },
      { networkId: "amoy", ...base }
    ]))
    const [sepolia, amoy] = await evm({ EVM_NETWORKS_FILE: networks, EVM_PRIVATE_KEY_AMOY_FILE: file("amoy.key", KEY) })
    expect(Redacted.value(sepolia!.privateKey)).toBe(KEY)
    expect(Redacted.value(amoy!.privateKey)).toBe(KEY)
    expect(sepolia!.rpcUrl).toBe(base.rpcUrl)

    const bad = file("bad.key", "0x" + "5e".repeat(31) + "zz\n")
    const refused = await evmError({ EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base, privateKeyFile: bad }]) })
    expect(refused).toMatch(/EVM network x: the signer key from privateKeyFile ".*bad.key" is not 0x \+ 64 hex/)
    expect(refused).not.toContain("5e5e")
    expect(await evmError({ EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base, privateKeyFile: Path.join(dir, "none") }]) }))
      .toMatch(/privateKeyFile ".*none" cannot be read \(ENOENT\)/)
    expect(await evmError({ EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base, privateKey: KEY, privateKeyFile: bad }]) }))
      .toMatch(/privateKey and privateKeyFile are both set/)
    const both = await evmError({
      EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base }]),
      EVM_PRIVATE_KEY_X: KEY,
      EVM_PRIVATE_KEY_X_FILE: file("x.key", KEY)
    })
    expect(both).toContain("EVM_PRIVATE_KEY_X and EVM_PRIVATE_KEY_X_FILE are both set")
    expect(both).not.toContain("5e5e")
    expect(await evmError({ EVM_NETWORKS: "[]", EVM_NETWORKS_FILE: networks })).toContain("EVM_NETWORKS and EVM_NETWORKS_FILE are both set")
  })
})

describe("anchord start with its secrets in files", { timeout: 120_000 }, () => {
  it("serves, and neither its output nor its command line or environment shows a secret", async () => {
    // A role of its own with a password no other output could contain by chance.
    const fresh = await freshDatabase()
    const role = `anchord_secret_${Crypto.randomBytes(4).toString("hex")}`
    const password = `PW${Crypto.randomBytes(12).toString("hex")}`
    const name = new URL(fresh).pathname.slice(1)
    await query(adminUrl(), `CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
    await query(adminUrl(), `ALTER DATABASE ${name} OWNER TO ${role}`)
    const url = new URL(fresh)
    url.username = role
    url.password = password
    const databaseUrl = url.toString()
    // A port the kernel has just handed out and freed: a random one can be an ephemeral port in use.
    const port = await freePort()
    const env: Record<string, string> = {
      ...process.env as Record<string, string>,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "Debug",
      DATABASE_URL_FILE: file("start-db", `${databaseUrl}\n`),
      // An RPC that refuses connections: its errors are logged, and must not quote the URL's key.
      EVM_NETWORKS_FILE: file("start-evm.json", JSON.stringify([{ networkId: "sepolia", ...base, pollIntervalMs: 200, rpcTimeoutMs: 500 }])),
      EVM_PRIVATE_KEY_SEPOLIA_FILE: file("start-sepolia.key", `${KEY}\n`)
    }
    for (const name of ["DATABASE_URL", "REDIS_URL", "EVM_NETWORKS", "EVM_PRIVATE_KEY_SEPOLIA", "TEST_DATABASE_URL"]) delete env[name]
    const child = track(ChildProcess.spawn(process.execPath, [Path.resolve(import.meta.dirname, "../../src/cli/main.ts"), "start"], {
      cwd: dir,
      env,
      stdio: ["ignore", "pipe", "pipe"]
    }))
    forwardOutput(child, "anchord start")
    let output = ""
    child.stdout!.on("data", (b) => {
      output += b
    })
    child.stderr!.on("data", (b) => {
      output += b
    })
    try {
      await waitFor("anchord start's /v1/health", async () => {
        if (child.exitCode !== null) throw new Error(`anchord start exited with ${child.exitCode}`)
        return (await fetch(`http://127.0.0.1:${port}/v1/health`)).status > 0
      }, 60_000)
      // Long enough for the EVM watcher to fail on the RPC a few times and log it.
      await waitFor("a log line about the unreachable RPC", async () => /rpc|127\.0\.0\.1:1\b/i.test(output), 5_000).catch(() => {})
      const procEnv = Fs.readFileSync(`/proc/${child.pid}/environ`, "utf8")
      const cmdline = Fs.readFileSync(`/proc/${child.pid}/cmdline`, "utf8")
      for (const secret of [password, "RPCSECRET", KEY.slice(2), "5e5e5e5e"]) {
        expect(output).not.toContain(secret)
        expect(procEnv).not.toContain(secret)
        expect(cmdline).not.toContain(secret)
      }
      expect(output).toContain("anchord listening")
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM")
        await new Promise((r) => child.once("exit", r))
      }
    }
  })
})
