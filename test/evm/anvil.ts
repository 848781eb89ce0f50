// Spawns a throwaway anvil (npm @foundry-rs/anvil) on a free port for a test file.
import { spawn, type ChildProcess } from "node:child_process"
import path from "node:path"
import { fileURLToPath } from "node:url"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { forwardOutput } from "../support/process.ts"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"

const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const ANVIL_BIN = path.join(ROOT_DIR, "node_modules/.bin/anvil")

export interface Anvil {
  readonly rpcUrl: string
  readonly port: number
  rpc(method: string, params?: ReadonlyArray<unknown>): Promise<unknown>
  /** A new random key with 100 ETH. */
  fundedKey(): Promise<Hex>
  stop(): Promise<void>
}

export async function startAnvil(): Promise<Anvil> {
  const port = await freePort()
  const rpcUrl = `http://127.0.0.1:${port}`
  const child: ChildProcess = spawn(ANVIL_BIN, ["--port", String(port), "--host", "127.0.0.1", "--silent"], {
    stdio: ["ignore", "ignore", "pipe"]
  })
  forwardOutput(child, "anvil")
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
  let exited = false
  child.on("exit", () => void (exited = true))

  let id = 0
  const rpc = async (method: string, params: ReadonlyArray<unknown> = []): Promise<unknown> => {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params })
    })
    const body = (await response.json()) as { result?: unknown; error?: { message: string } }
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`)
    return body.result
  }

  const deadline = Date.now() + 15_000
  for (;;) {
    if (exited) throw new Error(`anvil exited early: ${stderr}`)
    try {
      await rpc("eth_chainId")
      break
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL")
        throw new Error(`anvil did not start on port ${port}: ${stderr}`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  return {
    rpcUrl,
    port,
    rpc,
    fundedKey: async () => {
      const key = generatePrivateKey()
      await rpc("anvil_setBalance", [privateKeyToAccount(key).address, "0x56bc75e2d63100000"])
      return key
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
        setTimeout(() => {
          if (!exited) child.kill("SIGKILL")
        }, 3_000).unref()
      })
  }
}
