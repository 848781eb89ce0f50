/** `anchord` as real processes: the CLI (JSON output) and `anchord start` for crash tests. */
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"

const root = Path.resolve(import.meta.dirname, "../..")
const entry = Path.join(root, "src/cli/main.ts")

/** Runs an `anchord … --json` command and parses its output. */
export const anchordJson = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  JSON.parse(ChildProcess.execFileSync(process.execPath, [entry, ...args], {
    cwd: root, env: { ...process.env, ...env }, encoding: "utf8"
  }))

/** Starts `anchord start` with env (PORT required) and resolves once /v1/health answers. */
export const spawnAnchord = async (env: Record<string, string>) => {
  const child = ChildProcess.spawn(process.execPath, [entry, "start"], {
    cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "inherit"]
  })
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
