/**
 * `anchord dev` (what `npm start` runs) as a child process on a data directory, with free ports:
 * shared by scripts/soak-dev-restarts.ts and the dev-node tests (test/cli/). Waits on conditions
 * (the banner, /v1/health), never on fixed sleeps.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"

export const root = Path.resolve(import.meta.dirname, "..")
export const cliEntry = Path.join(root, "src/cli/main.ts")

/** A temporary data directory PostgreSQL can use (it runs as another user under root: 0755). */
export const tempDataDir = (prefix: string) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
  Fs.chmodSync(dir, 0o755)
  return dir
}

export interface DevNode {
  readonly child: ChildProcess.ChildProcess
  readonly baseUrl: string
  readonly key: string
  readonly rpcUrl: string
  readonly fabricProfile: string
  readonly output: () => string
  /** Resolves when the process has exited. */
  readonly stop: (signal: NodeJS.Signals) => Promise<void>
}

/** The environment of a dev node on `dataDir`: no DATABASE_URL / EVM_NETWORKS / FABRIC_NETWORKS, no fixed ports. */
export const devEnv = (dataDir: string, port: number): NodeJS.ProcessEnv => ({
  ...process.env,
  ANCHORD_DATA_DIR: dataDir,
  PORT: String(port),
  DATABASE_URL: "",
  EVM_NETWORKS: "",
  FABRIC_NETWORKS: "",
  DEV_CHAIN_PORT: "0",
  DEV_FABRIC_PORT: "0",
  LOG_FORMAT: "json"
})

export const startDevNode = async (dataDir: string, options: { port?: number; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<DevNode> => {
  const port = options.port ?? await freePort()
  const child = ChildProcess.spawn(process.execPath, [cliEntry, "dev"], {
    cwd: root,
    env: { ...devEnv(dataDir, port), ...options.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout!.on("data", (d) => out += d)
  child.stderr!.on("data", (d) => out += d)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const until = Date.now() + (options.timeoutMs ?? 120_000)
  const fail = (what: string) => {
    child.kill("SIGKILL")
    return new Error(`anchord dev ${what}:\n${out}`)
  }
  while (!/Test key:\s+dcp_test_\w{32}/.test(out)) {
    if (Date.now() > until || child.exitCode !== null) throw fail("did not start")
    await new Promise((r) => setTimeout(r, 100))
  }
  const baseUrl = `http://127.0.0.1:${port}`
  for (;;) {
    try {
      if ((await fetch(`${baseUrl}/v1/health`)).ok) break
    } catch {}
    if (Date.now() > until || child.exitCode !== null) throw fail("did not answer")
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    child,
    baseUrl,
    key: /Test key:\s+(dcp_test_\w{32})/.exec(out)![1],
    rpcUrl: /Chain:\s+(http:\/\/\S+)/.exec(out)![1],
    fabricProfile: /Profile:\s+(\S+)/.exec(out)![1],
    output: () => out,
    stop: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    }
  }
}

/** Runs `anchord <args>` (the CLI, as a separate process) on the dev node's data directory. */
export const runCli = (dataDir: string, args: ReadonlyArray<string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    ChildProcess.execFile(process.execPath, [cliEntry, ...args], {
      cwd: root,
      env: { ...process.env, ANCHORD_DATA_DIR: dataDir, DATABASE_URL: "" }
    }, (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }))
  })
