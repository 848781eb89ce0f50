/**
 * The dispatcher's side of `webhook_deliveries` and `webhook_fanouts`: one service, composed of one file per
 * concern, so the dispatcher has one dependency and the statements of each path read together.
 *
 *  - The claim path (./claimedDeliveries.ts): deliveries written by the `events` trigger (`record.updated`,
 *    `record.deleted`, `anchor.failed`, `webhook.test`) and the failed first attempts of chunks are claimed when due
 *    under a lease, with a per-host cap counted across nodes; their outcomes move them on the retry ladder (failed
 *    attempts logged in `webhook_attempts`, a success kept on its row); and when the next one is due.
 *  - Rendering inputs (./renderInputs.ts): what a claimed delivery's first render reads; its bodies are stored
 *    before the first send (saveRendered) and reused by every retry.
 *  - The fan-out (./fanOut.ts, over the `webhook_fanouts` statements of ./fanoutRows.ts): a confirmation's
 *    `anchor.confirmed` events, derived from its `batch_events` row and the records' anchors, are taken within the
 *    per-host caps of this node, rendered and signed in the node and leased to it as chunks; no delivery row yet.
 *  - Chunk outcomes (./chunkOutcomes.ts): once a chunk's answers are in, its first-attempt successes go into one
 *    `webhook_chunk_deliveries` row per receiver, its failures into delivery rows on the ladder (the claim path
 *    from there on), in one transaction with the leased row's deletion.
 *
 * These statements run per claim batch on every node, so they stay as they were measured (docs/webhooks.md,
 * "Performance"): batches, `FOR UPDATE SKIP LOCKED`, primary-key lookups, claims and outcomes committed
 * asynchronously, and untraced (`Effect.fnUntraced`). Every statement goes through `SqlSchema` with its row
 * schema, but one, measured hot: see `findRenderInputs`.
 *
 * Why tables of our own rather than `PersistedQueue`: deliveries are created by triggers, directly on the
 * `events` outbox or through the fan-out rows of `batch_events` (same transaction as any producer's state
 * change, producers need no code), and the delivery log the API serves (./DeliveryLog.ts) reads the same rows
 * that carry the retry state.
 *
 * Leases, the retry ladder and the rotation overlap read time through Effect's Clock (passed to the
 * statements), not PostgreSQL's now(): one clock for the node and its tests (TestClock). Nodes sharing
 * a database must keep their clocks in sync (NTP): a skew shifts leases by as much.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { type ChunkDelivery, type ChunkOutcome, makeChunkOutcomes } from "./chunkOutcomes.ts"
import { type Claimed, type Completion, type CompletionResult, makeClaimedDeliveries, type Rendering } from "./claimedDeliveries.ts"
import { makeDispatcherSql } from "./dispatcherSql.ts"
import { type Chunk, type FanOutStep, makeFanOut } from "./fanOut.ts"
import { makeFanoutRows } from "./fanoutRows.ts"
import { type KeyedRenderInput, makeRenderInputs } from "./renderInputs.ts"

/** LISTEN/NOTIFY channel of the dispatchers (the triggers that create deliveries and fan-out rows notify it too). */
export const WEBHOOK_CHANNEL = "anchord_webhooks"

export class DeliveryClaims extends Context.Service<DeliveryClaims, {
  /**
   * Claims up to `limit` due deliveries, skipping receivers (host:port) that already have `perHost`
   * attempts in flight across all nodes (a soft cap: one claim may add up to `limit` more).
   */
  readonly claim: (limit: number, leaseMillis: number, nodeId: string, token: string,
    perHost: number) => Effect.Effect<ReadonlyArray<Claimed>, SqlError.SqlError>
  /**
   * Fans out up to `limit` events of the oldest unleased `webhook_fanouts` rows: the records taken are rendered,
   * signed, and leased to this node as chunks (one per row), in one transaction; no delivery row is written before
   * their outcomes (completeChunk).
   * A receiver's events wait in the row while this node has `perHost` attempts in flight to it
   * (`inFlight`, this node's own count: the fan-out reads no other node's claims).
   */
  readonly fanOut: FanOutStep
  /** What the first render of these deliveries needs: the stored event, the record, the signing secrets now. */
  readonly renderInputs: (seqs: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<KeyedRenderInput>, SqlError.SqlError>
  /** Stores bodies rendered for the first time; returns what is stored (a concurrent render may have won). */
  readonly saveRendered: (items: ReadonlyArray<Rendering>) => Effect.Effect<ReadonlyArray<Rendering>, SqlError.SqlError>
  /** Records outcomes of claimed attempts (ignored when the claim was lost); the deliveries' next state. */
  readonly complete: (items: ReadonlyArray<Completion>, nodeId: string) => Effect.Effect<ReadonlyArray<CompletionResult>, SqlError.SqlError>
  /**
   * A chunk's outcomes, once, for the records still in the leased row: the first-attempt successes in one
   * `webhook_chunk_deliveries` row per receiver, each failure in a delivery row of its own, PENDING on the ladder
   * (or FAILED) with its attempt logged; the leased row goes. Nothing when the lease was lost (another node sends
   * the chunk again). The deliveries written, by record.
   */
  readonly completeChunk: (chunk: Chunk, outcomes: ReadonlyArray<ChunkOutcome>,
    nodeId: string) => Effect.Effect<ReadonlyArray<ChunkDelivery>, SqlError.SqlError>
  /** Milliseconds until the earliest pending delivery is due (0 if one is due now), null if none. */
  readonly nextDueMillis: Effect.Effect<number | null, SqlError.SqlError>
}>()("anchord/webhooks/DeliveryClaims") {
  static readonly layer = Layer.effect(
    DeliveryClaims,
    Effect.gen(function*() {
      const statements = makeDispatcherSql(yield* SqlClient.SqlClient)
      const fanouts = makeFanoutRows(statements)
      return DeliveryClaims.of({
        ...makeClaimedDeliveries(statements),
        ...makeRenderInputs(statements),
        ...makeFanOut(statements, fanouts),
        ...makeChunkOutcomes(statements, fanouts)
      })
    })
  )
}
