/** `anchord` as real processes: the CLI (JSON output) and `anchord start` for crash tests. */
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import * as Readline from "node:readline"

const root = Path.resolve(import.meta.dirname, "../..")
const entry = Path.join(root, "src/cli/main.ts")

/**
 * Runs an `anchord … --json` command and parses its output; its output goes to the test file's
 * log (execFileSync would have copied its stderr to the terminal).
 */
export const anchordJson = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const result = ChildProcess.spawnSync(process.execPath, [entry, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: "utf8"
  })
  logRun(`anchord ${args.join(" ")}`, result)
  if (result.error) throw result.error
  if (result.status !== 0) throw new Error(`anchord ${args.join(" ")} exited with ${result.status ?? result.signal}:\n${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** Writes a finished child's command line, exit status and output to the test file's log. */
export const logRun = (
  command: string,
  result: { readonly status: number | null; readonly stdout?: string | null; readonly stderr?: string | null }
) => {
  console.log(`$ ${command}  (exit ${result.status})`)
  for (const [name, text] of [["out", result.stdout], ["err", result.stderr]] as const) {
    for (const line of text?.split("\n") ?? []) if (line !== "") console.log(`  [${name}] ${line}`)
  }
}

/**
 * Forwards a child's piped stdout and stderr, line by line, to this worker's console, so they land
 * in the test file's log (test/support/setupLogs.ts) rather than on the terminal. Reading the pipes
 * also keeps a chatty child from blocking on a full pipe.
 */
export const forwardOutput = (child: ChildProcess.ChildProcess, label: string) => {
  const forward = (stream: NodeJS.ReadableStream | null, name: string) => {
    if (stream === null) return
    Readline.createInterface({ input: stream, crlfDelay: Infinity })
      .on("line", (line) => console.log(`[${label} ${child.pid} ${name}] ${line}`))
  }
  forward(child.stdout, "out")
  forward(child.stderr, "err")
}

/**
 * Children still running when this worker exits are killed: a test that timed out never reaches its
 * `finally`, and its `anchord` would otherwise outlive the run (holding vitest's output pipe open).
 */
const children = new Set<ChildProcess.ChildProcess>()
process.once("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
})
export const track = <C extends ChildProcess.ChildProcess>(child: C): C => {
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

/**
 * Without EVM_NETWORKS a node refuses EVM records (CHAIN_NOT_CONFIGURED) unless EVM_<ENV>_NETWORK_ID
 * names a network (one another node could serve): tests that only need EVM records to wait in QUEUED
 * name the default ids, as test/support/node.ts does.
 */
export const EVM_UNSERVED_IDS = { EVM_TEST_NETWORK_ID: "hardhat-local", EVM_LIVE_NETWORK_ID: "evm-live" } as const

export const evmUnservedEnv = (env: Record<string, string | undefined>): Record<string, string> =>
  env.EVM_NETWORKS === undefined && env.EVM_NETWORKS_FILE === undefined && process.env.EVM_NETWORKS === undefined
    ? { ...EVM_UNSERVED_IDS }
    : {}

/** Starts `anchord start` with env (PORT required) and resolves once /v1/health answers. */
export const spawnAnchord = async (env: Record<string, string>) => {
  const child = track(ChildProcess.spawn(process.execPath, [entry, "start"], {
    cwd: root,
    env: { ...process.env, ...evmUnservedEnv(env), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  }))
  forwardOutput(child, "anchord start")
  const until = Date.now() + 30_000
  while (Date.now() < until) {
    try {
      if ((await fetch(`http://127.0.0.1:${env.PORT}/v1/health`)).ok) return child
    } catch {}
    await new Promise((r) => setTimeout(r, 100))
  }
  child.kill("SIGKILL")
  throw new Error("anchord start did not answer on /v1/health")
}

/** Sends a signal and resolves when the process has exited (listening before the kill). */
export const killAndWait = (child: ChildProcess.ChildProcess, signal: NodeJS.Signals) => {
  const exited = new Promise((r) => child.once("exit", r))
  child.kill(signal)
  return exited
}
