/**
 * EVM test support: a whole node in-process over given EVM networks (like test/support/node.ts,
 * plus the network list), chains (anvil, Hardhat EDR), and a TCP proxy that can take an RPC
 * endpoint "down" and back without touching the chain.
 */
import { Effect, Redacted } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { createPublicClient, http, type Hex } from "viem"
import { NetworkHealth } from "../../src/anchoring/NetworkHealth.ts"
import { fromJson, EvmNetworks, type EvmNetworkConfig, type EvmNetworkJson } from "../../src/evm/config.ts"
import { deployAnchorRegistry } from "../../src/evm/deploy.ts"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { freshDatabase, query } from "../support/db.ts"
import { call, startNode } from "../support/node.ts"

export { call, freshDatabase, query }

export interface EvmTestNode {
  readonly baseUrl: string
  readonly databaseUrl: string
  readonly createAccount: () => Promise<string>
  readonly createKey: (accountId: string) => Promise<string>
  /** True while this node leads (holds the advisory lock of) at least one network. */
  readonly isLeader: () => Promise<boolean>
  /** The node's metrics as /metrics renders them (without a metrics listener). */
  readonly metricsText: () => Promise<string>
  readonly stop: () => Promise<void>
}

export const network = (n: Omit<EvmNetworkJson, "privateKey">, privateKey: Hex): EvmNetworkConfig =>
  fromJson(n as Parameters<typeof fromJson>[0], Redacted.make(privateKey))

export const startEvmNode = async (options: {
  readonly databaseUrl?: string
  readonly networks: ReadonlyArray<EvmNetworkConfig>
}): Promise<EvmTestNode> => {
  const node = await startNode({ databaseUrl: options.databaseUrl, layer: makeNodeLayer(EvmNetworks.layerWith(options.networks)) })
  return {
    baseUrl: node.baseUrl,
    databaseUrl: node.databaseUrl,
    createAccount: () => node.createAccount({ name: "evm test" }),
    createKey: (accountId) => node.createKey(accountId).then((k) => k.key),
    isLeader: () =>
      node.runtime.runPromise(Effect.flatMap(NetworkHealth, (h) => Effect.map(h.snapshot, (states) => states.some((s) => s.chainType === "evm" && s.leader)))),
    metricsText: () => node.runtime.runPromise(PrometheusMetrics.format()),
    stop: node.stop
  }
}

export const deploy = (rpcUrl: string, privateKey: Hex) => deployAnchorRegistry({ rpcUrl, privateKey })

export const publicClient = (rpcUrl: string) => createPublicClient({ transport: http(rpcUrl) })

export { waitFor } from "../support/wait.ts"

export const statusesOf = async (databaseUrl: string, ids: ReadonlyArray<string>) => {
  const rows = await query<{ id: string; status: string }>(databaseUrl, "SELECT id, status FROM record_states WHERE id = ANY($1)", [ids])
  return new Map(rows.map((r) => [r.id, r.status]))
}

export const allAnchored = (databaseUrl: string, ids: ReadonlyArray<string>) => async () => {
  const s = await statusesOf(databaseUrl, ids)
  return ids.every((id) => s.get(id) === "ANCHORED")
}

/** A TCP proxy in front of an RPC endpoint that can take it "down" or freeze it (scripts/bench/cluster-kit.ts). */
export { tcpProxy as rpcProxy } from "../../scripts/bench/cluster-kit.ts"
