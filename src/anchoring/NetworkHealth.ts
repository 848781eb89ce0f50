/**
 * How each configured network looks from this node: whether it leads the network's pipeline, whether
 * the endpoint answers, the head it last saw, the last failure. One `SubscriptionRef` of every network's
 * state, updated by the pipelines (src/anchoring/Pipeline.ts, the EVM watcher, the Fabric indexer) and
 * read by /v1/health (src/system/http.ts); `changes` streams every new state.
 */
import { Clock, Context, Effect, Layer, Option, SubscriptionRef } from "effect"
import type { AnchorChainType } from "./model.ts"

export interface NetworkState {
  readonly networkId: string
  readonly chainType: AnchorChainType
  /** This node holds the network's lock: it batches, sends and watches. */
  readonly leader: boolean
  readonly rpc: "up" | "down" | "unknown"
  /** The last block number seen (EVM head, Fabric block). */
  readonly head: bigint | undefined
  readonly lastError: string | undefined
  /** When `leader` or `rpc` last changed (the node's Clock, epoch ms). */
  readonly lastChangeAt: number
}

export type NetworkStateChange = Partial<Pick<NetworkState, "leader" | "rpc" | "head" | "lastError">>

export class NetworkHealth extends Context.Service<NetworkHealth, {
  /** Every configured network's state, by network id (ids are unique across chains: they key anchors). */
  readonly states: SubscriptionRef.SubscriptionRef<ReadonlyMap<string, NetworkState>>
  /** A configured network, not led yet, endpoint not tried yet. */
  readonly register: (networkId: string, chainType: AnchorChainType) => Effect.Effect<void>
  /** Applies a change to a network's state (nothing is published when it changes nothing). */
  readonly update: (networkId: string, change: NetworkStateChange) => Effect.Effect<void>
  /** The states, EVM networks first, each chain's in configuration order. */
  readonly snapshot: Effect.Effect<ReadonlyArray<NetworkState>>
}>()("anchord/anchoring/NetworkHealth") {
  static readonly layer = Layer.effect(
    NetworkHealth,
    Effect.gen(function*() {
      const states = yield* SubscriptionRef.make<ReadonlyMap<string, NetworkState>>(new Map())

      const register = Effect.fn("NetworkHealth.register")(function*(networkId: string, chainType: AnchorChainType) {
        const now = yield* Clock.currentTimeMillis
        yield* SubscriptionRef.update(states, (m) =>
          new Map(m).set(networkId, {
            networkId,
            chainType,
            leader: false,
            rpc: "unknown",
            head: undefined,
            lastError: undefined,
            lastChangeAt: now
          }))
      })

      // Untraced: the Fabric indexer moves `head` once per block.
      const update = Effect.fnUntraced(function*(networkId: string, change: NetworkStateChange) {
        const now = yield* Clock.currentTimeMillis
        yield* SubscriptionRef.updateSome(states, (m) => {
          const current = m.get(networkId)
          if (current === undefined) return Option.none()
          const next = { ...current, ...change }
          const moved = next.leader !== current.leader || next.rpc !== current.rpc
          if (!moved && next.head === current.head && next.lastError === current.lastError) return Option.none()
          return Option.some(new Map(m).set(networkId, moved ? { ...next, lastChangeAt: now } : next))
        })
      })

      const rank = (s: NetworkState) => s.chainType === "evm" ? 0 : 1
      const snapshot = Effect.map(SubscriptionRef.get(states), (m) => [...m.values()].sort((a, b) => rank(a) - rank(b)))

      return NetworkHealth.of({ states, register, update, snapshot })
    })
  )
}
