/**
 * The seam between the shared anchoring pipeline (src/anchoring/Pipeline.ts) and a chain. EVM
 * (src/evm/Anchoring.ts) and Fabric (src/fabric/Anchoring.ts) are two implementations of
 * `AnchorChain`; leadership, the batcher, the loops and the health reporting are shared.
 */
import type { Duration, Effect, Scope } from "effect"
import type { BatchTarget } from "./Batcher.ts"
import type { AnchorChainType } from "./model.ts"

/** What a connected chain does once this node leads its network. */
export interface ChainPipeline<E> {
  /** Sends the open batches (after each batcher pass). */
  readonly submit: Effect.Effect<void, E>
  /** Watches the chain and confirms batches: a tick repeated every `watchPeriod`, or a long-running effect. */
  readonly watch: Effect.Effect<void, E>
  readonly watchPeriod: Duration.Input
}

export interface AnchorChain<E, R> {
  readonly chainType: AnchorChainType
  readonly target: BatchTarget
  /** Connects (and checks the endpoint) once leadership is held; lives as long as the leadership. */
  readonly connect: Effect.Effect<ChainPipeline<E>, E, R | Scope.Scope>
  /** Errors meaning "the endpoint is unreachable" (health shows `down`). */
  readonly isUnavailable: (error: unknown) => boolean
}
