/**
 * Verification tests: a node anchoring on a local chain, ANCHORED records with their bundles,
 * and the CLI run as a real process.
 */
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import type { Hex } from "viem"
import { afterAll } from "vitest"
import { logRun } from "../support/process.ts"
import { allAnchored, call, deploy, network, startEvmNode, waitFor, type EvmTestNode } from "../evm/support.ts"

export const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

export interface Anchored {
  readonly recordId: string
  readonly data: Record<string, unknown>
  readonly bundle: any
  readonly lookup: any
}

export interface VerifyEnv {
  readonly node: EvmTestNode
  readonly key: string
  readonly rpcUrl: string
  readonly contract: Hex
  readonly chainId: number
  readonly privateKey: Hex
  anchor(bodies: ReadonlyArray<{ data: Record<string, unknown>; packageMode?: string }>): Promise<Array<Anchored>>
}

export const startVerifyEnv = async (chain: { rpcUrl: string; privateKey: Hex }, name: string): Promise<VerifyEnv> => {
  const d = await deploy(chain.rpcUrl, chain.privateKey)
  const node = await startEvmNode({
    networks: [network({
      networkId: `verify-${name}`,
      rpcUrl: chain.rpcUrl,
      chainId: d.chainId,
      contractAddress: d.address,
      confirmations: 1,
      environment: "test",
      batchMaxSize: 50,
      batchWindowMs: 200,
      pollIntervalMs: 100
    }, chain.privateKey)]
  })
  const key = await node.createKey(await node.createAccount())
  return {
    node,
    key,
    rpcUrl: chain.rpcUrl,
    contract: d.address,
    chainId: d.chainId,
    privateKey: chain.privateKey,
    anchor: async (bodies) => {
      // One request, so one transaction and one batch: the tests fold proofs of several leaves. Posted one by
      // one, a loaded machine's batch window split them (a single-leaf batch has an empty proof).
      const r = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key, body: { records: bodies } })
      if (r.status !== 202) throw new Error(`anchor: ${r.status} ${r.text}`)
      const ids: Array<string> = r.json.data.results.map((item: { data: { recordId: string } }) => item.data.recordId)
      await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 20_000)
      return Promise.all(ids.map(async (id, i) => ({
        recordId: id,
        data: bodies[i]!.data,
        bundle: (await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).json.data,
        lookup: (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json
      })))
    }
  }
}

const dir = mkdtempSync(Path.join(tmpdir(), "anchord-verify-"))
// Removed after the test file that imported this module (each file has its own instance).
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
/** Writes JSON to a temp file and returns its path. */
export const jsonFile = (value: unknown): string => {
  const p = Path.join(dir, `doc-${++n}.json`)
  writeFileSync(p, typeof value === "string" ? value : JSON.stringify(value))
  return p
}

/** `anchord verify …` as a real process (src/cli/main.ts on this Node). */
export const runCli = (args: ReadonlyArray<string>): Promise<{ code: number; stdout: string; stderr: string; ms: number }> =>
  new Promise((resolve) => {
    const started = Date.now()
    execFile(process.execPath, [Path.join(root, "src/cli/main.ts"), "verify", ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : -1) : 0
      logRun(`anchord verify ${args.join(" ")}`, { status: code, stdout, stderr })
      resolve({ code, stdout, stderr, ms: Date.now() - started })
    })
  })

export const clone = <A>(a: A): A => JSON.parse(JSON.stringify(a))
