/**
 * Each network's transparency log in PostgreSQL (docs/design/transparency-log.md), kept per batch: a batch's
 * range and the tree hashes its leaves add (Go's sumdb/tlog stored-hash layout, src/tlog/tree.ts) in one row
 * of `log_batches`; the leaves themselves are its records' hashes in its RFC 9162 order, read through its
 * anchors. The head in `log_heads` is tentative (every sent batch executed); `log_checkpoints` holds what the
 * chain confirmed, the only part served.
 *
 * A range is assigned when the batch's transaction is signed, in the transaction that stores it, under a lock
 * on the network's head row; a batch sent back (PENDING, FAILED, DROPPED) truncates the log at its start and
 * every later range goes with it, to be assigned again.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { type Checkpoint, signCheckpoint } from "../tlog/checkpoint.ts"
import { emptyTreeHash, HASH_SIZE } from "../tlog/hash.ts"
import type { NoteSigner } from "../tlog/note.ts"
import { proveConsistency } from "../tlog/proofs.ts"
import { appendHashes, type HashReader, storedHashCount, treeHash } from "../tlog/tree.ts"
import { statements } from "./statements.ts"

/** A batch's place in its network's log, and the checkpoint its transaction carries. */
export interface AssignedRange {
  readonly networkId: string
  readonly batchId: string
  /** The log's size before the batch: the chain's stored size when its transaction runs. */
  readonly oldSize: number
  readonly oldRoot: Uint8Array
  /** oldSize + the batch's leaf count. */
  readonly newSize: number
  readonly newRoot: Uint8Array
  /** RFC 9162 consistency proof from (oldSize, oldRoot) to (newSize, newRoot); empty when oldSize is 0. */
  readonly consistency: ReadonlyArray<Uint8Array>
}

export interface PublishedCheckpoint {
  readonly networkId: string
  readonly size: number
  readonly root: Uint8Array
  readonly batchId: string
  /** The C2SP signed note, when the node signs checkpoints. */
  readonly note: string | null
  readonly createdAt: Date
}

/**
 * Signs a network's checkpoints as C2SP signed notes: the origin names the log, the network's signer holds the
 * key (one key for every log of the node, named after each log's origin).
 */
export interface CheckpointSigning {
  readonly origin: (networkId: string) => string
  readonly signer: (networkId: string) => NoteSigner
}

/** Optional: without it checkpoints are published without a note. */
export class CheckpointSigner extends Context.Reference<CheckpointSigning | undefined>("anchord/translog/CheckpointSigner", {
  defaultValue: () => undefined
}) {}

const hex = (hash: string) => Buffer.from(hash, "hex")

const concat = (hashes: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(hashes.length * HASH_SIZE)
  hashes.forEach((h, i) => out.set(h, i * HASH_SIZE))
  return out
}

export class LogStore extends Context.Service<LogStore, {
  /**
   * The batch's range at the network's tentative head, its stored hashes and the new head, written in one
   * transaction (joining the caller's) that locks the head; `leaves` are its record hashes in its RFC 9162
   * order. A batch that has a range already gets it back (a replacement transaction carries the same
   * checkpoint).
   */
  readonly assign: (networkId: string, batchId: string, leaves: ReadonlyArray<Uint8Array>) => Effect.Effect<AssignedRange, SqlError.SqlError>
  /**
   * The log cut back to where the batch's range starts: its range and every later one deleted, the head back
   * to its start. Returns the later batches' ids, oldest first (their transactions in flight will revert), or
   * none when the batch had no range. Cutting a published range is a defect: the chain confirmed it.
   */
  readonly truncateFrom: (batchId: string) => Effect.Effect<ReadonlyArray<string>, SqlError.SqlError>
  /** The batch's checkpoint confirmed on chain: published (signed when a CheckpointSigner is given). Idempotent. */
  readonly publish: (batchId: string) => Effect.Effect<PublishedCheckpoint | undefined, SqlError.SqlError>
  /** A batch's record hashes in its RFC 9162 leaf order, read through its anchors. */
  readonly batchLeaves: (batchId: string, leafCount: number) => Effect.Effect<ReadonlyArray<Uint8Array>, SqlError.SqlError>
  /**
   * Whether a checkpoint the chain holds is one of this log's: the end of one of its ranges with that root, or
   * size 0 before anything was published. Otherwise the chain's log is not this database's (another database,
   * a restore from before it): appending to it would only revert.
   */
  readonly agrees: (networkId: string, size: number, root: Uint8Array) => Effect.Effect<boolean, SqlError.SqlError>
  /** The tentative head (what the chain holds once every sent batch executes); size 0 before the first batch. */
  readonly head: (networkId: string) => Effect.Effect<{ readonly size: number; readonly root: Uint8Array }, SqlError.SqlError>
  readonly range: (batchId: string) => Effect.Effect<
    { readonly networkId: string; readonly start: number; readonly leafCount: number; readonly rootAfter: Uint8Array; readonly published: boolean } | undefined,
    SqlError.SqlError
  >
  /** Stored hashes by index (src/tlog/tree.ts): for tiles and proofs, below a published checkpoint's size. */
  readonly hashReader: (networkId: string) => HashReader<SqlError.SqlError>
  readonly latestCheckpoint: (networkId: string) => Effect.Effect<PublishedCheckpoint | undefined, SqlError.SqlError>
  /** The published checkpoint of exactly `size` leaves, if there is one. */
  readonly checkpointAt: (networkId: string, size: number) => Effect.Effect<PublishedCheckpoint | undefined, SqlError.SqlError>
  /** The chain was reset (dev chain): the network's log, head and checkpoints forgotten; it starts empty again. */
  readonly forget: (networkId: string) => Effect.Effect<void, SqlError.SqlError>
  /** The log's leaves (record hashes) [start, end). */
  readonly entries: (networkId: string, start: number, end: number) => Effect.Effect<ReadonlyArray<Uint8Array>, SqlError.SqlError>
}>()("anchord/translog/LogStore") {
  static readonly layer = Layer.effect(
    LogStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const q = statements(sql)

      const hashReader = (networkId: string): HashReader<SqlError.SqlError> => ({
        readHashes: (indexes) =>
          rowDefects(q.hashes({ networkId, indexes })).pipe(Effect.flatMap((rows) => {
            const at = new Map(rows.map((r) => [r.i, r.h]))
            const out = indexes.map((i) => at.get(i))
            const missing = indexes.find((_, k) => out[k] === undefined)
            return missing === undefined
              ? Effect.succeed(out as ReadonlyArray<Uint8Array>)
              : Effect.die(new Error(`log of ${networkId}: no stored hash ${missing}`))
          }))
      })

      /** Reads stored hashes below `base` from the database, the rest from `fresh` (hashes not written yet). */
      const overlay = (networkId: string, base: number, fresh: ReadonlyArray<Uint8Array>): HashReader<SqlError.SqlError> => {
        const stored = hashReader(networkId)
        return {
          readHashes: (indexes) => {
            const old = indexes.filter((i) => i < base)
            return Effect.map(old.length === 0 ? Effect.succeed([]) : stored.readHashes(old), (hashes) => {
              let k = 0
              return indexes.map((i) => (i < base ? hashes[k++]! : fresh[i - base]!))
            })
          }
        }
      }

      const lockedHead = (networkId: string) =>
        Effect.andThen(rowDefects(q.ensureHead({ networkId, emptyRoot: emptyTreeHash() })), rowDefects(q.lockHead(networkId)))

      // A tlog range error here is a bug of this store (sizes come from its own rows): a defect.
      const orDie = <A>(e: Effect.Effect<A, SqlError.SqlError | { readonly _tag: "TreeRangeError" }>) =>
        Effect.catchTag(e, "TreeRangeError", Effect.die) as Effect.Effect<A, SqlError.SqlError>

      const assign = Effect.fn("LogStore.assign")(function*(networkId: string, batchId: string, leaves: ReadonlyArray<Uint8Array>) {
        if (leaves.length === 0) return yield* Effect.die(new Error(`batch ${batchId}: no leaves to log`))
        return yield* sql.withTransaction(Effect.gen(function*() {
          const head = yield* lockedHead(networkId)
          const existing = yield* rowDefects(q.range(batchId))
          if (Option.isSome(existing)) {
            const r = existing.value
            const reader = hashReader(networkId)
            const oldRoot = yield* orDie(treeHash(r.start, reader))
            const end = r.start + r.leafCount
            const consistency = r.start === 0 ? [] : yield* orDie(proveConsistency(r.start, end, reader))
            return { networkId, batchId, oldSize: r.start, oldRoot, newSize: end, newRoot: r.rootAfter, consistency } satisfies AssignedRange
          }
          const start = head.size
          const end = start + leaves.length
          const firstIndex = storedHashCount(start)
          const stored = hashReader(networkId)
          const fresh = yield* orDie(appendHashes(start, leaves, stored))
          const reader = overlay(networkId, firstIndex, fresh)
          const newRoot = yield* orDie(treeHash(end, reader))
          const consistency = start === 0 ? [] : yield* orDie(proveConsistency(start, end, reader))
          yield* rowDefects(q.insertRange({ batchId, networkId, start, leafCount: leaves.length, firstIndex, hashes: concat(fresh), rootAfter: newRoot }))
          yield* rowDefects(q.setHead({ networkId, size: end, root: newRoot }))
          return { networkId, batchId, oldSize: start, oldRoot: head.root, newSize: end, newRoot, consistency } satisfies AssignedRange
        }))
      })

      const truncateFrom = Effect.fn("LogStore.truncateFrom")(function*(batchId: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const found = yield* rowDefects(q.range(batchId))
          if (Option.isNone(found)) return []
          const { networkId, start } = found.value
          yield* lockedHead(networkId)
          const published = yield* rowDefects(q.publishedFrom({ networkId, start }))
          if (published.length > 0) {
            return yield* Effect.die(new Error(`log of ${networkId}: batch ${published[0]!.batchId} at or after ${start} is confirmed on chain`))
          }
          const gone = yield* rowDefects(q.deleteFrom({ networkId, start }))
          const root = start === 0
            ? emptyTreeHash()
            : yield* rowDefects(q.rangeEndingAt({ networkId, size: start })).pipe(
              Effect.flatMap(Option.match({
                onSome: (r) => Effect.succeed(r.rootAfter),
                onNone: () => orDie(treeHash(start, hashReader(networkId)))
              }))
            )
          yield* rowDefects(q.setHead({ networkId, size: start, root }))
          return gone.map((r) => r.batchId).filter((id) => id !== batchId)
        }))
      })

      const publish = Effect.fn("LogStore.publish")(function*(batchId: string) {
        const signing = yield* CheckpointSigner
        return yield* sql.withTransaction(Effect.gen(function*() {
          const marked = yield* rowDefects(q.markPublished(batchId))
          if (Option.isNone(marked)) return undefined
          const r = marked.value
          const size = r.start + r.leafCount
          const checkpoint: Checkpoint = { origin: signing?.origin(r.networkId) ?? r.networkId, size, root: r.rootAfter }
          const note = signing === undefined ? null : signCheckpoint(checkpoint, [signing.signer(r.networkId)])
          yield* rowDefects(q.insertCheckpoint({ networkId: r.networkId, size, root: r.rootAfter, batchId, note }))
          return Option.getOrUndefined(yield* rowDefects(q.latestCheckpoint(r.networkId)))
        }))
      })

      const batchLeaves = Effect.fn("LogStore.batchLeaves")(function*(batchId: string, leafCount: number) {
        const rows = yield* rowDefects(q.batchLeaves(batchId))
        if (rows.length !== leafCount || rows.some((r, i) => r.i !== i)) {
          return yield* Effect.die(new Error(`batch ${batchId}: ${rows.length} leaves with log indexes, expected 0..${leafCount - 1}`))
        }
        return rows.map((r) => hex(r.hash))
      })

      const head = Effect.fn("LogStore.head")(function*(networkId: string) {
        return Option.getOrElse(yield* rowDefects(q.head(networkId)), () => ({ size: 0, root: emptyTreeHash() }))
      })

      const range = Effect.fn("LogStore.range")(function*(batchId: string) {
        return Option.getOrUndefined(yield* rowDefects(q.range(batchId)))
      })

      const latestCheckpoint = Effect.fn("LogStore.latestCheckpoint")(function*(networkId: string) {
        return Option.getOrUndefined(yield* rowDefects(q.latestCheckpoint(networkId)))
      })

      const checkpointAt = Effect.fn("LogStore.checkpointAt")(function*(networkId: string, size: number) {
        return Option.getOrUndefined(yield* rowDefects(q.checkpointAt({ networkId, size })))
      })

      const entries = Effect.fn("LogStore.entries")(function*(networkId: string, start: number, end: number) {
        const rows = yield* rowDefects(q.entries({ networkId, start, end }))
        if (rows.length !== Math.max(0, end - start) || rows.some((r, k) => r.i !== start + k)) {
          return yield* Effect.die(new Error(`log of ${networkId}: entries [${start}, ${end}) not all found (${rows.length})`))
        }
        return rows.map((r) => hex(r.hash))
      })

      const agrees = Effect.fn("LogStore.agrees")(function*(networkId: string, size: number, root: Uint8Array) {
        if (size === 0) return Option.isNone(yield* rowDefects(q.latestCheckpoint(networkId)))
        const r = yield* rowDefects(q.rangeEndingAt({ networkId, size }))
        return Option.isSome(r) && Buffer.from(r.value.rootAfter).equals(root)
      })

      const forget = Effect.fn("LogStore.forget")(function*(networkId: string) {
        yield* rowDefects(q.forget(networkId))
      })

      return LogStore.of({ assign, truncateFrom, publish, batchLeaves, agrees, head, range, hashReader, latestCheckpoint, checkpointAt, forget, entries })
    })
  )
}
