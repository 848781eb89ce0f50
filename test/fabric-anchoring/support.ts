/**
 * Fabric anchoring test support: a whole node in-process (HTTP on a real socket, PostgreSQL) whose
 * Fabric network is a dev peer started by the test, reached through the real fabric-gateway client
 * over real gRPC — the same code path as a real network (FABRIC_NETWORKS).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { type EvmNetworkConfig, EvmNetworks } from "../../src/evm/config.ts"
import { NetworkHealth } from "../../src/anchoring/NetworkHealth.ts"
import { type FabricNetworkConfig, type FabricNetworkJson, FabricNetworks } from "../../src/fabric/config.ts"
import { devPeerNetwork } from "../../src/dev/fabricNetwork.ts"
import { createDevIdentity, type DevPeer, type DevPeerOptions, startDevPeer } from "../../src/dev/fabric-peer/index.ts"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { freshDatabase, query } from "../support/db.ts"
import { call, startNode } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"
import { startAnvil } from "../evm/anvil.ts"
import { deploy, network } from "../evm/support.ts"

export { call, freshDatabase, query }

export interface FabricTestNode {
  readonly baseUrl: string
  readonly databaseUrl: string
  readonly createKey: () => Promise<string>
  readonly isLeader: () => Promise<boolean>
  readonly stop: () => Promise<void>
}

/** A dev peer with its identity files under a temporary directory (removed by `close`). */
export const startTestPeer = async (options: DevPeerOptions = {}): Promise<DevPeer & { readonly dir: string }> => {
  const dir = mkdtempSync(join(tmpdir(), "anchord-fabric-"))
  const peer = await startDevPeer({ dataDir: dir, blockIntervalMs: 50, ...options })
  return {
    ...peer,
    dir,
    close: async () => {
      await peer.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** The dev peer as a configured network, exactly what FABRIC_NETWORKS would give. */
export const fabricNetwork = (peer: DevPeer, overrides: Partial<FabricNetworkJson> = {}): FabricNetworkConfig =>
  devPeerNetwork(peer, { batchWindowMs: 200, retryIntervalMs: 200, ...overrides })

export const startFabricNode = async (options: {
  readonly databaseUrl?: string
  readonly fabric: ReadonlyArray<FabricNetworkConfig>
  readonly evm?: ReadonlyArray<EvmNetworkConfig>
}): Promise<FabricTestNode> => {
  const node = await startNode({
    databaseUrl: options.databaseUrl,
    layer: makeNodeLayer(EvmNetworks.layerWith(options.evm ?? []), FabricNetworks.layerWith(options.fabric))
  })
  return {
    baseUrl: node.baseUrl,
    databaseUrl: node.databaseUrl,
    createKey: async () => (await node.createKey(await node.createAccount({ name: "fabric test" }))).key,
    isLeader: () =>
      node.runtime.runPromise(
        Effect.flatMap(NetworkHealth, (h) => Effect.map(h.snapshot, (states) => states.some((s) => s.chainType === "fabric" && s.leader)))
      ),
    stop: node.stop
  }
}

export { sleep, waitFor } from "../support/wait.ts"

export const allAnchored = (databaseUrl: string, ids: ReadonlyArray<string>) => async () => {
  const rows = await query<{ n: number }>(databaseUrl, "SELECT count(*)::int AS n FROM record_states WHERE id = ANY($1) AND status = 'ANCHORED'", [ids])
  return rows[0]!.n === ids.length
}

/**
 * A node anchoring on a dev peer (Fabric) and on anvil (EVM, so hybrid records too), an API key, an auditor's
 * own Fabric identity (for `anchord verify` as a process), and `bodies` posted to /v1/anchor and ANCHORED.
 * Whatever was started is stopped again when the setup fails half-way.
 */
export const startFabricEvmFixture = async (options: {
  readonly evmNetworkId: string
  /** Also serve anvil as the network's public RPC (the verify page's). */
  readonly publicRpc?: boolean
  readonly bodies: ReadonlyArray<unknown>
  readonly anchoredWithinMs: number
}) => {
  const stops: Array<() => Promise<void>> = []
  const stop = async () => {
    for (const f of stops.reverse()) await f()
  }
  try {
    const peer = await startTestPeer()
    stops.push(() => peer.close())
    const anvil = await startAnvil()
    stops.push(() => anvil.stop())
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    const node = await startFabricNode({
      fabric: [fabricNetwork(peer)],
      evm: [network({
        networkId: options.evmNetworkId,
        rpcUrl: anvil.rpcUrl,
        ...(options.publicRpc === true ? { publicRpcUrl: anvil.rpcUrl } : {}),
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 1,
        batchWindowMs: 200,
        pollIntervalMs: 100
      }, pk)]
    })
    stops.push(() => node.stop())
    const key = await node.createKey()
    const auditor = createDevIdentity(peer.mspId, { dir: join(peer.dir, "auditor"), commonName: "auditor" })
    const ids: Array<string> = []
    for (const body of options.bodies) ids.push((await call(node.baseUrl, "POST", "/v1/anchor", { key, body })).json.data.recordId)
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), options.anchoredWithinMs)
    return { peer, anvil, node, key, auditor, ids, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
