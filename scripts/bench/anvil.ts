/** What the chain benchmarks share: a throwaway anvil (automine) and the CLI run for its JSON output. */
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"

const root = Path.resolve(import.meta.dirname, "../..")

/** anvil on a free port, answering eth_chainId before this resolves (waits at most 15 s). */
export const startAnvil = async () => {
  const port = await freePort()
  const child = ChildProcess.spawn(Path.join(root, "node_modules/.bin/anvil"), ["--port", String(port), "--host", "127.0.0.1", "--silent", "--gas-limit",
    "100000000"], {
    stdio: "ignore"
  })
  const rpcUrl = `http://127.0.0.1:${port}`
  for (let i = 0; i < 150; i++) {
    try {
      const r = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" },
        body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\"}" })
      if (r.ok) break
    } catch {}
    await new Promise((r) => setTimeout(r, 100))
  }
  return { rpcUrl, stop: () => void child.kill("SIGTERM") }
}

/** `anchord <args> --json` against env; its parsed output. */
export const runCli = (args: Array<string>, env: Record<string, string>) =>
  JSON.parse(ChildProcess.execFileSync(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: "utf8"
  }))
