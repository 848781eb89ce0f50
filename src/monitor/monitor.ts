/**
 * `anchord monitor`: audits a network's transparency log (docs/transparency-log.md) trusting only the chain. It
 * reads every checkpoint AnchorRegistry accepted (./chain.ts) and the node's tiles (./tiles.ts), and checks:
 *  - the node's served checkpoint is one the chain holds (same size, same root; signed by `--key` when given);
 *  - the tiles rebuild that checkpoint's root, each tile against its parent (src/tlog/tileReader.ts), and every
 *    earlier checkpoint on chain is a prefix of it (its root from the same tiles): nothing rewritten, no split view;
 *  - each anchored batch's leaves are in the log: the entries of its range hash to the tree's leaves there, and
 *    to the batch's own RFC 9162 root as the chain recorded it.
 * One line per checkpoint; the first inconsistency ends the run with its reason (exit 1); a source it cannot read
 * ends it with exit 2. `--follow` keeps watching.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { Hex } from "viem"
import { toHex } from "../anchoring/rfc9162.ts"
import type { RpcClient, RpcError } from "../verify/evm.ts"
import { type Checkpoint, openCheckpoint, parseCheckpoint } from "../tlog/checkpoint.ts"
import { equalBytes, leafHash } from "../tlog/hash.ts"
import { merkleTreeHash } from "../tlog/memory.ts"
import { parseVerifierKey } from "../tlog/note.ts"
import { tileHashReader } from "../tlog/tileReader.ts"
import type { TileMismatch, TreeRangeError } from "../tlog/errors.ts"
import { ENTRIES_LEVEL, parseEntryBundle, tilePath } from "../tlog/tiles.ts"
import { type HashReader, storedHashIndex, treeHash } from "../tlog/tree.ts"
import { type ChainCheckpoint, headBlock, readCheckpoints } from "../verify/checkpoints.ts"
import type { TilesSource, TilesUnavailable } from "./tiles.ts"

/** The log is not what the chain says it is: the monitor's finding (exit 1). */
export class Inconsistency extends Data.TaggedError("Inconsistency")<{ readonly message: string }> {}

export interface MonitorOptions {
  readonly rpc: RpcClient
  readonly registry: Hex
  readonly tiles: TilesSource
  /** The node's checkpoint key (a signed-note verifier key); unset: the signature is not checked. */
  readonly key?: string | undefined
  readonly fromBlock: bigint
  /** Keep watching, a round every `intervalMs`. */
  readonly follow: boolean
  readonly intervalMs: number
  readonly print: (line: string) => Effect.Effect<void>
}

const ENTRIES_PER_BUNDLE = 256
const short = (bytes: Uint8Array) => `${toHex(bytes).slice(0, 16)}…`

/** The served checkpoint, its signature checked by `key` when given. */
const servedCheckpoint = (signed: string, key: string | undefined): Result.Result<Checkpoint, string> => {
  const text = signed.slice(0, signed.lastIndexOf("\n\n") + 1)
  const unsigned = parseCheckpoint(text)
  if (Result.isFailure(unsigned)) return Result.fail(`the node's checkpoint does not parse: ${unsigned.failure.message}`)
  if (key === undefined) return Result.succeed(unsigned.success)
  const verifier = parseVerifierKey(key)
  if (Result.isFailure(verifier)) return Result.fail(`--key: ${verifier.failure.message}`)
  const opened = openCheckpoint(signed, unsigned.success.origin, [verifier.success])
  return Result.isFailure(opened)
    ? Result.fail(`the node's checkpoint is not signed by --key: ${opened.failure.message}`)
    : Result.succeed(opened.success.checkpoint)
}

/** The entries [start, end) of a log of `size`, from its entry bundles (each fetched once per round). */
const entriesOf = (tiles: TilesSource, size: number, start: number, end: number, bundles: Map<number, Array<Uint8Array>>) =>
  Effect.gen(function*() {
    const out: Array<Uint8Array> = []
    for (let n = Math.floor(start / ENTRIES_PER_BUNDLE); n * ENTRIES_PER_BUNDLE < end; n++) {
      let bundle = bundles.get(n)
      if (bundle === undefined) {
        const width = Math.min(ENTRIES_PER_BUNDLE, size - n * ENTRIES_PER_BUNDLE)
        const path = tilePath({ level: ENTRIES_LEVEL, n, width })
        const parsed = parseEntryBundle(yield* tiles.file(path))
        if (Result.isFailure(parsed) || parsed.success.length !== width) {
          return yield* new Inconsistency({ message: `${path}: not an entry bundle of ${width} entries` })
        }
        bundle = parsed.success
        bundles.set(n, bundle)
      }
      for (let i = Math.max(start, n * ENTRIES_PER_BUNDLE); i < Math.min(end, (n + 1) * ENTRIES_PER_BUNDLE); i++) {
        out.push(bundle[i - n * ENTRIES_PER_BUNDLE]!)
      }
    }
    return out
  })

/** One chain checkpoint against the tree the tiles prove: a prefix of it, its batch's entries where the chain says. */
const checkOne = Effect.fnUntraced(function*(
  c: ChainCheckpoint,
  served: Checkpoint,
  reader: HashReader<TilesUnavailable | TileMismatch | TreeRangeError>,
  tiles: TilesSource,
  bundles: Map<number, Array<Uint8Array>>
) {
  const where = `checkpoint of batch ${c.batchId} (block ${c.blockNumber}, size ${c.size})`
  const root = yield* treeHash(c.size, reader)
  if (!equalBytes(root, c.root)) {
    return yield* new Inconsistency({
      message: `${where}: the node's log at size ${c.size} has root ${toHex(root)}, the chain ${toHex(c.root)}: the log was rewritten`
    })
  }
  const start = c.size - c.leafCount
  const entries = yield* entriesOf(tiles, served.size, start, c.size, bundles)
  const leaves = entries.map((e) => leafHash(e))
  const treeLeaves = yield* reader.readHashes(leaves.map((_, k) => storedHashIndex(0, start + k)))
  const bad = leaves.findIndex((h, k) => !equalBytes(h, treeLeaves[k]!))
  if (bad >= 0) return yield* new Inconsistency({ message: `${where}: entry ${start + bad} does not hash to the log's leaf ${start + bad}` })
  if (!equalBytes(merkleTreeHash(leaves), c.batchLogRoot)) {
    return yield* new Inconsistency({
      message: `${where}: entries ${start}..${c.size - 1} are not the batch the chain anchored (its RFC 9162 root ${toHex(c.batchLogRoot)})`
    })
  }
  return `${where}: root ${short(c.root)} consistent; the batch's ${c.leafCount} entries in the log`
})

/** Runs the audit; fails with Inconsistency, or with an unreadable source (RpcError, TilesUnavailable). */
export const runMonitor = (o: MonitorOptions): Effect.Effect<void, Inconsistency | RpcError | TilesUnavailable> =>
  Effect.gen(function*() {
    const chain: Array<ChainCheckpoint> = []
    let nextBlock = o.fromBlock
    /** The largest size audited so far, and its root: every later tree must keep it as a prefix. */
    let audited: { readonly size: number; readonly root: Uint8Array } | undefined
    let checked = 0
    while (true) {
      const head = yield* headBlock(o.rpc)
      if (head >= nextBlock) chain.push(...(yield* readCheckpoints(o.rpc, o.registry, nextBlock, head)))
      nextBlock = head + 1n
      const served = servedCheckpoint(yield* o.tiles.checkpoint, o.key)
      if (Result.isFailure(served)) return yield* new Inconsistency({ message: served.failure })
      const cp = served.success
      const onChain = chain.find((c) => c.size === cp.size)
      if (cp.size > 0 && onChain === undefined) {
        return yield* new Inconsistency({
          message: `the node serves a checkpoint of size ${cp.size} (root ${toHex(cp.root)}) that the chain never accepted${
            chain.length === 0 ? "" : ` (the chain's newest: size ${chain.at(-1)!.size})`
          }`
        })
      }
      if (onChain !== undefined && !equalBytes(onChain.root, cp.root)) {
        return yield* new Inconsistency({
          message: `the node's checkpoint of size ${cp.size} has root ${toHex(cp.root)}; the chain accepted ${
            toHex(onChain.root)
          } (batch ${onChain.batchId}, block ${onChain.blockNumber})`
        })
      }
      if (audited === undefined || cp.size > audited.size) {
        const reader = tileHashReader({ size: cp.size, root: cp.root }, o.tiles)
        if (audited !== undefined && !equalBytes(yield* treeHash(audited.size, reader), audited.root)) {
          return yield* new Inconsistency({ message: `the log at size ${cp.size} no longer holds the tree of size ${audited.size} audited before` })
        }
        const bundles = new Map<number, Array<Uint8Array>>()
        for (const c of chain.filter((c) => c.size <= cp.size && c.size > (audited?.size ?? 0))) {
          yield* o.print(yield* checkOne(c, cp, reader, o.tiles, bundles))
          checked++
        }
        audited = { size: cp.size, root: cp.root }
      }
      const pending = chain.filter((c) => c.size > cp.size).length
      yield* o.print(
        `log ${cp.origin}: size ${cp.size}, root ${short(cp.root)}: ${checked} checkpoint(s) on chain checked${
          pending > 0 ? `, ${pending} newer on chain not served yet` : ""
        }${o.key === undefined ? " (signature not checked: no --key)" : ""}`
      )
      if (!o.follow) return
      yield* Effect.sleep(o.intervalMs)
    }
  }).pipe(
    // Tiles that do not rebuild the checkpoint the chain holds, or sizes that do not fit: the node's log is not it.
    Effect.catchTag("TileMismatch", (e) => Effect.fail(new Inconsistency({ message: `a tile does not match the checkpoint: ${e.detail}` }))),
    Effect.catchTag("TreeRangeError", (e) => Effect.fail(new Inconsistency({ message: `the log's sizes do not fit: ${e.detail}` })))
  )
