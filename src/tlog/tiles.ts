/**
 * C2SP tlog-tiles (c2sp.org/tlog-tiles): the log's tree served as static tiles. A hash tile at level L,
 * index N holds up to 256 consecutive tree hashes of tree level 8L, starting at node N·256: level 0 tiles are
 * leaf hashes, a level L+1 hash is the root of a full level L tile. The rightmost tiles of a tree are partial
 * (width W < 256). Entry bundles hold the leaves' entries (for anchord, the 32-byte record hashes), each as a
 * big-endian uint16 length and its bytes. Paths: `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`, N in
 * 3-digit groups, all but the last prefixed by "x" (1234067 → x001/x234/067).
 *
 * The coordinate math is Go's sumdb/tlog tile.go with the height fixed at 8 by C2SP; the functions take the
 * height as an optional last argument only so tests can use small tiles on small trees.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { MalformedInput, TreeRangeError } from "./errors.ts"
import { HASH_SIZE, nodeHash } from "./hash.ts"
import { type HashReader, readExactly, splitStoredHashIndex, storedHashIndex } from "./tree.ts"

export const TILE_HEIGHT = 8
/** The level of entry bundles (`tile/entries/…`), which sit beside the level 0 hash tiles. */
export const ENTRIES_LEVEL = -1

/** Tile `n` of `level` (ENTRIES_LEVEL for an entry bundle), holding `width` hashes or entries (2^height when full). */
export interface Tile {
  readonly level: number
  readonly n: number
  readonly width: number
}

const full = (height: number) => 2 ** height

/** The smallest tile of hashes holding stored hash `index`, and where in its data that hash's subtree is. */
const locate = (index: number, height: number): { readonly tile: Tile; readonly start: number; readonly end: number } => {
  const { level: treeLevel, n: node } = splitStoredHashIndex(index)
  const level = Math.floor(treeLevel / height)
  const inTile = treeLevel - level * height
  // The hash is the root of 2^inTile consecutive hashes of the tile's own level.
  const n = Math.floor((node * 2 ** inTile) / full(height))
  const first = node * 2 ** inTile - n * full(height)
  const last = first + 2 ** inTile
  return { tile: { level, n, width: last }, start: first * HASH_SIZE, end: last * HASH_SIZE }
}

/** The tile of least width that holds stored hash `index`. */
export const tileForIndex = (index: number, height: number = TILE_HEIGHT): Tile => locate(index, height).tile

/** The subtree hash of 2^k consecutive hashes. */
export const tileHash = (data: Uint8Array): Uint8Array => {
  if (data.length === HASH_SIZE) return data.slice()
  const half = data.length / 2
  return nodeHash(tileHash(data.subarray(0, half)), tileHash(data.subarray(half)))
}

/**
 * Stored hash `index` from the data of `tile`, which must be the tile `tileForIndex` names or a wider one.
 * undefined when it is not in that tile or the data is too short.
 */
export const hashFromTile = (tile: Tile, data: Uint8Array, index: number, height: number = TILE_HEIGHT): Uint8Array | undefined => {
  if (tile.level < 0 || tile.width < 1 || tile.width > full(height) || data.length < tile.width * HASH_SIZE) return undefined
  const at = locate(index, height)
  if (at.tile.level !== tile.level || at.tile.n !== tile.n || at.tile.width > tile.width) return undefined
  return tileHash(data.subarray(at.start, at.end))
}

/** How many hashes level `level` has in a tree of `size` leaves (leaves for ENTRIES_LEVEL). */
const levelWidth = (level: number, size: number, height: number) => Math.floor(size / 2 ** (height * Math.max(level, 0)))

/**
 * The tiles a log publishes when its tree grows from `oldSize` to `newSize` leaves: every tile new or wider,
 * full and partial, entry bundles excluded (they follow the level 0 tiles).
 */
export const newTiles = (oldSize: number, newSize: number, height: number = TILE_HEIGHT): Array<Tile> => {
  const tiles: Array<Tile> = []
  for (let level = 0; levelWidth(level, newSize, height) > 0; level++) {
    const oldN = levelWidth(level, oldSize, height)
    const newN = levelWidth(level, newSize, height)
    if (oldN === newN) continue
    for (let n = Math.floor(oldN / full(height)); n < Math.floor(newN / full(height)); n++) tiles.push({ level, n, width: full(height) })
    const n = Math.floor(newN / full(height))
    const width = newN - n * full(height)
    if (width > 0) tiles.push({ level, n, width })
  }
  return tiles
}

/** True when `tile` (a hash tile or an entry bundle) is part of the tree of `size` leaves: its width fits what that tree has. */
export const tileInTree = (tile: Tile, size: number, height: number = TILE_HEIGHT): boolean =>
  tile.n * full(height) + tile.width <= levelWidth(tile.level, size, height)

/** The data of hash tile `tile`: its hashes from the store, concatenated. */
export const readTileData = <E>(tile: Tile, reader: HashReader<E>, height: number = TILE_HEIGHT): Effect.Effect<Uint8Array, E | TreeRangeError> => {
  if (tile.level < 0 || tile.width < 1 || tile.width > full(height)) return Effect.fail(new TreeRangeError({ detail: "not a hash tile" }))
  const start = tile.n * full(height)
  const indexes = Array.from({ length: tile.width }, (_, i) => storedHashIndex(height * tile.level, start + i))
  return readExactly(reader, indexes).pipe(Effect.map((hashes) => {
    const out = new Uint8Array(hashes.length * HASH_SIZE)
    hashes.forEach((h, i) => out.set(h, i * HASH_SIZE))
    return out
  }))
}

// --- paths ---------------------------------------------------------------------------------------

/** N as 3-digit groups, all but the last prefixed by "x": 1234067 → x001/x234/067. */
const encodeN = (n: number): string => {
  let s = String(n % 1000).padStart(3, "0")
  for (let m = Math.floor(n / 1000); m > 0; m = Math.floor(m / 1000)) s = `x${String(m % 1000).padStart(3, "0")}/${s}`
  return s
}

/** The tile's path under the log's prefix: `tile/<L>/<N>[.p/<W>]`, or `tile/entries/<N>[.p/<W>]`. */
export const tilePath = (tile: Tile): string =>
  `tile/${tile.level === ENTRIES_LEVEL ? "entries" : tile.level}/${encodeN(tile.n)}${tile.width === full(TILE_HEIGHT) ? "" : `.p/${tile.width}`}`

const badPath = (detail: string) => Result.fail(new MalformedInput({ format: "tile path", detail }))

/** A tile path, strictly: only the form `tilePath` writes is accepted (no leading zeros, no full width spelled out). */
export const parseTilePath = (path: string): Result.Result<Tile, MalformedInput> => {
  const f = path.split("/")
  if (f.length < 3 || f[0] !== "tile") return badPath(`${JSON.stringify(path)} is not tile/<L>/<N>[.p/<W>]`)
  let level: number
  if (f[1] === "entries") {
    level = ENTRIES_LEVEL
  } else if (/^(0|[1-9][0-9]?)$/.test(f[1]!) && Number(f[1]) <= 63) {
    level = Number(f[1])
  } else {
    return badPath(`level ${JSON.stringify(f[1])} is not 0 to 63 or "entries"`)
  }
  let groups = f.slice(2)
  let width = full(TILE_HEIGHT)
  if (groups.length >= 2 && groups[groups.length - 2]!.endsWith(".p")) {
    const w = groups[groups.length - 1]!
    if (!/^[1-9][0-9]{0,2}$/.test(w) || Number(w) >= full(TILE_HEIGHT)) return badPath(`width ${JSON.stringify(w)} is not 1 to 255`)
    width = Number(w)
    groups = [...groups.slice(0, -2), groups[groups.length - 2]!.slice(0, -2)]
  }
  if (groups.length > 5 || !groups.every((g, i) => (i === groups.length - 1 ? /^[0-9]{3}$/ : /^x[0-9]{3}$/).test(g))) {
    return badPath(`${JSON.stringify(path)}: the index is not 3-digit groups, all but the last x-prefixed`)
  }
  const n = groups.reduce((acc, g) => acc * 1000 + Number(g.replace("x", "")), 0)
  const tile = { level, n, width }
  return tilePath(tile) === path ? Result.succeed(tile) : badPath(`${JSON.stringify(path)} is not in canonical form`)
}

// --- entry bundles -------------------------------------------------------------------------------

/** An entry bundle: each entry as a big-endian uint16 length and its bytes. */
export const formatEntryBundle = (entries: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(entries.reduce((n, e) => n + 2 + e.length, 0))
  let at = 0
  for (const e of entries) {
    if (e.length > 0xffff) throw new TypeError("an entry of an entry bundle is at most 65535 bytes")
    out[at] = e.length >> 8
    out[at + 1] = e.length & 0xff
    out.set(e, at + 2)
    at += 2 + e.length
  }
  return out
}

/** The entries of an entry bundle; refused when a length runs past the end. */
export const parseEntryBundle = (bytes: Uint8Array): Result.Result<Array<Uint8Array>, MalformedInput> => {
  const entries: Array<Uint8Array> = []
  let at = 0
  while (at < bytes.length) {
    if (at + 2 > bytes.length) return Result.fail(new MalformedInput({ format: "entry bundle", detail: "a length is cut short" }))
    const length = bytes[at]! * 256 + bytes[at + 1]!
    if (at + 2 + length > bytes.length) return Result.fail(new MalformedInput({ format: "entry bundle", detail: "an entry runs past the end" }))
    entries.push(bytes.slice(at + 2, at + 2 + length))
    at += 2 + length
  }
  return Result.succeed(entries)
}
