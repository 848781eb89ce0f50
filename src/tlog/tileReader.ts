/**
 * A HashReader over a remote log's tiles that trusts nothing but a checkpoint (Go's sumdb/tlog
 * TileHashReader, for `anchord monitor`): every read fetches, with the tiles holding the hashes asked for,
 * the tiles that rebuild the checkpoint's root, checks that root, and checks each other tile against its
 * hash in the parent tile. Hashes it returns are therefore proven to be in the checkpoint's tree, so
 * treeHash, proveInclusion and proveConsistency (./tree.ts, ./proofs.ts) run over it check a log as they read.
 *
 * One difference from Go's code: Go authenticates the child tiles from position len(stx) of its tile list,
 * which skips a child tile when two of the root's subtree hashes share a tile (a tree of 7 leaves with tiles of
 * height 2, reading leaf 0); here every tile after the root's own is checked against its parent.
 */
import * as Effect from "effect/Effect"
import { TileMismatch, TreeRangeError } from "./errors.ts"
import { equalBytes, HASH_SIZE, nodeHash } from "./hash.ts"
import { hashFromTile, type Tile, TILE_HEIGHT, tileForIndex, tileHash } from "./tiles.ts"
import { type HashReader, storedHashCount, storedHashIndex, subTreeIndex } from "./tree.ts"

/** Fetches tiles (from HTTP, a cache, …); `saveTiles` is told which of them were verified, e.g. to cache them. */
export interface TileReader<E> {
  /** The data of each tile, in order; each must be exactly `width` hashes long. */
  readonly readTiles: (tiles: ReadonlyArray<Tile>) => Effect.Effect<ReadonlyArray<Uint8Array>, E>
  readonly saveTiles?: (tiles: ReadonlyArray<Tile>, data: ReadonlyArray<Uint8Array>) => Effect.Effect<void, E>
}

const key = (t: Tile) => `${t.level}/${t.n}/${t.width}`

/** Tile `t`'s k-th ancestor in the tiles of a tree of `size` leaves; undefined when there is none. */
const tileParent = (t: Tile, k: number, size: number, height: number): Tile | undefined => {
  const level = t.level + k
  const n = Math.floor(t.n / 2 ** (k * height))
  const max = Math.floor(size / 2 ** (level * height))
  const fullWidth = 2 ** height
  if (n * fullWidth + fullWidth < max) return { level, n, width: fullWidth }
  if (n * fullWidth >= max) return undefined
  return { level, n, width: max - n * fullWidth }
}

const mismatch = (detail: string) => Effect.fail(new TileMismatch({ detail }))

/** A HashReader over the tiles of the tree `tree` (a checkpoint already verified) read through `tiles`. */
export const tileHashReader = <E>(
  tree: { readonly size: number; readonly root: Uint8Array },
  tiles: TileReader<E>,
  height: number = TILE_HEIGHT
): HashReader<E | TileMismatch | TreeRangeError> => ({
  readHashes: (indexes) =>
    Effect.gen(function*() {
      if (indexes.length === 0) return []
      const order = new Map<string, number>()
      const list: Array<Tile> = []
      const add = (t: Tile) => {
        order.set(key(t), list.length)
        list.push(t)
        return list.length - 1
      }
      // The tiles that rebuild the root: authenticated by the checkpoint itself.
      const stx = subTreeIndex(0, tree.size, [])
      const stxTile = stx.map((x) => {
        const t = tileParent(tileForIndex(x, height), 0, tree.size, height)!
        return order.get(key(t)) ?? add(t)
      })
      const rootTiles = list.length
      // The tiles holding the hashes asked for, and the parents that authenticate them (parents first).
      const indexTile: Array<number> = []
      for (const [i, x] of indexes.entries()) {
        if (!Number.isSafeInteger(x) || x < 0 || x >= storedHashCount(tree.size)) {
          return yield* new TreeRangeError({ detail: `stored hash ${x} is not in the tree of size ${tree.size}` })
        }
        const tile = tileForIndex(x, height)
        let k = 0
        for (;; k++) {
          const p = tileParent(tile, k, tree.size, height)
          const j = p && order.get(key(p))
          if (j !== undefined) {
            if (k === 0) indexTile[i] = j
            break
          }
          if (k > 64) return yield* Effect.die(new Error("tlog: bad math in tileHashReader: no tile parent"))
        }
        for (k--; k >= 0; k--) {
          const p = tileParent(tile, k, tree.size, height)!
          // Only full tiles have parents.
          if (p.width !== 2 ** height) return yield* Effect.die(new Error("tlog: bad math in tileHashReader: a partial tile with a parent"))
          const j = add(p)
          if (k === 0) indexTile[i] = j
        }
      }

      const data = yield* tiles.readTiles(list)
      if (data.length !== list.length) return yield* mismatch(`${data.length} tiles read for ${list.length} asked`)
      for (const [i, t] of list.entries()) {
        if (data[i]!.length !== t.width * HASH_SIZE) return yield* mismatch(`tile ${key(t)} is ${data[i]!.length} bytes, not ${t.width * HASH_SIZE}`)
      }
      const fromTile = (j: number, x: number) => hashFromTile(list[j]!, data[j]!, x, height)

      // The root tiles against the checkpoint.
      let th = fromTile(stxTile[stx.length - 1]!, stx[stx.length - 1]!)
      for (let i = stx.length - 2; i >= 0 && th !== undefined; i--) {
        const h = fromTile(stxTile[i]!, stx[i]!)
        th = h && nodeHash(h, th)
      }
      if (th === undefined || !equalBytes(th, tree.root)) return yield* mismatch(`the tiles do not hash to the root of the tree of size ${tree.size}`)
      // Every other tile against its parent, which comes before it.
      for (let i = rootTiles; i < list.length; i++) {
        const t = list[i]!
        const p = tileParent(t, 1, tree.size, height)
        const j = p && order.get(key(p))
        const h = j !== undefined && p ? hashFromTile(p, data[j]!, storedHashIndex(p.level * height, t.n), height) : undefined
        if (h === undefined) return yield* Effect.die(new Error(`tlog: bad math in tileHashReader: lost the parent of ${key(t)}`))
        if (!equalBytes(h, tileHash(data[i]!))) return yield* mismatch(`tile ${key(t)} does not hash to its parent's entry`)
      }
      if (tiles.saveTiles) yield* tiles.saveTiles(list, data)
      return indexes.map((x, i) => fromTile(indexTile[i]!, x)!)
    })
})
