/**
 * A deployment file named by EVM_NETWORKS `deployment` (docs/configuration-evm.md), so the
 * contract address (and chain id) come from what deployed the contract rather than being copied:
 *
 * - Hardhat Ignition's `ignition/deployments/<id>/deployed_addresses.json`: `{"<Module>#<Future>":
 *   "0x…"}`; the entry is `AnchorRegistryModule#AnchorRegistry` (ignition/modules/AnchorRegistry.ts),
 *   else the one entry ending in `#AnchorRegistry`. The chain id is the journal's first line
 *   (`journal.jsonl` beside it, `DEPLOYMENT_INITIALIZE`), else the directory name `chain-<id>`.
 * - `scripts/deploy.ts` / `anchord deploy`'s `deployments/<networkId>.json`: `address`, `chainId`.
 *
 * Read once at start; a relative path is resolved against the working directory.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

export interface DeploymentFileContents {
  readonly address: `0x${string}`
  readonly chainId: number | undefined
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const IGNITION_KEY = "AnchorRegistryModule#AnchorRegistry"

/** The contract address and chain id in `file`; throws an Error whose message names the file and what is wrong. */
export const readDeploymentFile = (file: string): DeploymentFileContents => {
  const path = Path.resolve(file)
  let json: unknown
  try {
    json = JSON.parse(Fs.readFileSync(path, "utf8"))
  } catch (e) {
    const reason = (e as { code?: string }).code === "ENOENT" ? "no such file" : e instanceof SyntaxError ? "not valid JSON" : "unreadable"
    throw new Error(`deployment file ${path}: ${reason}`, { cause: e })
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new Error(`deployment file ${path}: not a JSON object`)
  const o = json as Record<string, unknown>
  if (typeof o.address === "string") {
    // scripts/deploy.ts's record
    if (!ADDRESS.test(o.address)) throw new Error(`deployment file ${path}: address is not a 0x-prefixed 20-byte hex address`)
    return { address: o.address as `0x${string}`, chainId: typeof o.chainId === "number" ? o.chainId : undefined }
  }
  const keys = IGNITION_KEY in o ? [IGNITION_KEY] : Object.keys(o).filter((k) => k.endsWith("#AnchorRegistry"))
  if (keys.length !== 1) {
    throw new Error(`deployment file ${path}: ${keys.length === 0 ? "no" : "more than one"} AnchorRegistry entry ` +
      `(expected "${IGNITION_KEY}" of Ignition's deployed_addresses.json, or scripts/deploy.ts's "address")`)
  }
  const address = o[keys[0]!]
  if (typeof address !== "string" || !ADDRESS.test(address)) throw new Error(`deployment file ${path}: ${keys[0]} is not an address`)
  return { address: address as `0x${string}`, chainId: ignitionChainId(Path.dirname(path)) }
}

const ignitionChainId = (dir: string): number | undefined => {
  try {
    const first = Fs.readFileSync(Path.join(dir, "journal.jsonl"), "utf8").split("\n").find((l) => l.trim() !== "")
    const id = first === undefined ? undefined : (JSON.parse(first) as { chainId?: unknown }).chainId
    if (typeof id === "number") return id
  } catch {}
  const m = /^chain-([0-9]+)$/.exec(Path.basename(dir))
  return m === null ? undefined : Number(m[1])
}
