/**
 * `/verify/config.json`: what the node tells its public verify page (docs/console.md). The page
 * works without it (the visitor then enters a JSON-RPC URL).
 *
 * {
 *   "networks": [
 *     { "networkId": "sepolia", "chainType": "evm", "chainId": 11155111,
 *       "rpcUrl": "https://rpc.sepolia.example", "explorerUrl": "https://sepolia.etherscan.io" }
 *   ]
 * }
 *
 * Every URL here is public: the node must list RPC endpoints meant for anyone (never one carrying
 * a provider key), and allow their origins in the page's `connect-src`.
 */

export interface VerifyNetwork {
  /** The node's name for the network, as proof bundles carry it in `networkId`. */
  readonly networkId: string
  readonly chainType: "evm"
  /** EIP-155 chain id: what an anchor is matched on (and what the chain-id check confirms). */
  readonly chainId: number
  /** A public JSON-RPC endpoint the browser calls directly (CORS and the page's connect-src must allow it). */
  readonly rpcUrl: string
  /** Block explorer base URL: transactions link to `<explorerUrl>/tx/<txHash>`. */
  readonly explorerUrl?: string | undefined
}

export interface VerifyPageConfig {
  readonly networks: ReadonlyArray<VerifyNetwork>
}

const isHttpUrl = (v: unknown): v is string => {
  if (typeof v !== "string") return false
  try {
    const u = new URL(v)
    return u.protocol === "https:" || u.protocol === "http:"
  } catch {
    return false
  }
}

/** Keeps the well-formed networks of a parsed config.json; `problems` says what was dropped and why. */
export const parseConfig = (json: unknown): { config: VerifyPageConfig; problems: Array<string> } => {
  const problems: Array<string> = []
  const networks: Array<VerifyNetwork> = []
  const list = typeof json === "object" && json !== null ? (json as { networks?: unknown }).networks : undefined
  if (!Array.isArray(list)) problems.push("config.json has no networks list")
  else {
    list.forEach((n: unknown, i) => {
      const e = (typeof n === "object" && n !== null ? n : {}) as Record<string, unknown>
      if ((e.chainType ?? "evm") !== "evm") return // only EVM networks are asked from the browser
      if (typeof e.networkId !== "string" || !Number.isSafeInteger(e.chainId) || !isHttpUrl(e.rpcUrl)) {
        problems.push(`networks[${i}]: needs networkId, chainId and an http(s) rpcUrl`)
        return
      }
      networks.push({
        networkId: e.networkId,
        chainType: "evm",
        chainId: e.chainId as number,
        rpcUrl: e.rpcUrl,
        explorerUrl: isHttpUrl(e.explorerUrl) ? e.explorerUrl : undefined
      })
    })
  }
  return { config: { networks }, problems }
}

/** The configured network for an EVM anchor: same chain id, preferring the same network id. */
export const networkFor = (config: VerifyPageConfig, anchor: { readonly networkId: string; readonly chainId?: number | null | undefined }) =>
  config.networks.find((n) => n.chainId === anchor.chainId && n.networkId === anchor.networkId) ??
    config.networks.find((n) => n.chainId === anchor.chainId)
