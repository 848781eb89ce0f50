// src/tlog/tiles.ts and tileReader.ts: C2SP tlog-tiles against Go's sumdb/tlog tests (tlog_test.go's TestTree
// tile checks and TestTilePath, tile_test.go's TestNewTilesForSize, ported), the examples of
// c2sp.org/tlog-tiles, and a TileHashReader that must refuse every tampered tile.
//   npx vitest run test/tlog/tiles.test.ts
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { verifyConsistency, verifyInclusion } from "../../src/tlog/check.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { memoryHashReader } from "../../src/tlog/memory.ts"
import { proveConsistency, proveInclusion } from "../../src/tlog/proofs.ts"
import { type TileReader, tileHashReader } from "../../src/tlog/tileReader.ts"
import { ENTRIES_LEVEL, formatEntryBundle, hashFromTile, newTiles, parseEntryBundle, parseTilePath, readTileData, type Tile, tileForIndex, tileInTree,
  tilePath } from "../../src/tlog/tiles.ts"
import { appendHashes, storedHashCount, storedHashIndex, treeHash } from "../../src/tlog/tree.ts"

const run = <A, E>(e: Effect.Effect<A, E>): A => Effect.runSync(e)
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const text = (s: string) => new Uint8Array(Buffer.from(s))
const key = (t: Tile) => `${t.level}/${t.n}/${t.width}`

const buildLog = (entries: ReadonlyArray<Uint8Array>) => {
  const stored: Array<Uint8Array> = []
  stored.push(...run(appendHashes(0, entries, memoryHashReader(stored))))
  return stored
}

/** Serves the tiles of a stored log (`tamper` changes a tile's bytes on the way); counts what was read and saved. */
const tileServer = (stored: Array<Uint8Array>, height: number, tamper?: (t: Tile, data: Uint8Array) => Uint8Array) => {
  const counts = { read: 0, saved: 0 }
  const reader: TileReader<never> = {
    readTiles: (tiles) =>
      Effect.sync(() => {
        counts.read += tiles.length
        return tiles.map((t) => {
          const data = run(readTileData(t, memoryHashReader(stored), height))
          return tamper ? tamper(t, data) : data
        })
      }),
    saveTiles: (tiles) => Effect.sync(() => void (counts.saved += tiles.length))
  }
  return { reader, counts }
}

describe("hash tiles (Go's TestTree with tiles of height 2)", () => {
  it("tiles grow by extension, every stored hash is in its tile, and a TileHashReader proves every leaf and tree", () => {
    const H = 2
    const stored: Array<Uint8Array> = []
    const tiles = new Map<string, Uint8Array>()
    const leaves: Array<Uint8Array> = []
    const trees: Array<Uint8Array> = []
    for (let i = 0; i < 100; i++) {
      const data = text(`leaf ${i}`)
      const before = stored.length
      stored.push(...run(appendHashes(i, [data], memoryHashReader(stored))))
      leaves.push(leafHash(data))
      const th = run(treeHash(i + 1, memoryHashReader(stored)))
      trees.push(th)
      for (const t of newTiles(i, i + 1, H)) {
        const d = run(readTileData(t, memoryHashReader(stored), H))
        const old = tiles.get(key({ ...t, width: t.width - 1 })) ?? new Uint8Array()
        expect(hex(d.subarray(0, old.length)), `tile ${key(t)} extends the earlier one`).toBe(hex(old))
        expect(d.length).toBe(old.length + 32)
        tiles.set(key(t), d)
      }
      for (const t of [...newTiles(0, i + 1, H), ...newTiles(Math.floor(i / 2), i + 1, H)]) {
        expect(hex(run(readTileData(t, memoryHashReader(stored), H))), key(t)).toBe(hex(tiles.get(key(t))!))
      }
      for (let j = before; j < stored.length; j++) {
        const t = tileForIndex(j, H)
        const d = tiles.get(key(t))
        expect(d, `tile ${key(t)} of stored hash ${j} is published`).toBeDefined()
        expect(hex(hashFromTile(t, d!, j, H)!)).toBe(hex(stored[j]!))
      }

      const server = tileServer(stored, H)
      const thr = tileHashReader({ size: i + 1, root: th }, server.reader, H)
      for (let j = 0; j <= i; j++) {
        expect(hex(run(thr.readHashes([storedHashIndex(0, j)]))[0]!)).toBe(hex(leaves[j]!))
        expect(verifyInclusion(j, i + 1, leaves[j]!, run(proveInclusion(j, i + 1, thr)), th)).toBe(true)
      }
      expect(Effect.runSync(Effect.flip(thr.readHashes([storedHashCount(i + 1)])))._tag).toBe("TreeRangeError")
      for (let j = 0; j <= i; j++) {
        expect(hex(run(treeHash(j + 1, thr)))).toBe(hex(trees[j]!))
        expect(verifyConsistency(j + 1, i + 1, trees[j]!, th, run(proveConsistency(j + 1, i + 1, thr)))).toBe(true)
      }
      // Go's storage.unsaved: every tile read was verified and saved.
      expect(server.counts.saved).toBe(server.counts.read)
    }
  })

  it("refuses a tampered tile, wherever it sits in the read (including the child tile Go's loop skips)", () => {
    const H = 2
    const stored = buildLog(Array.from({ length: 40 }, (_, i) => text(`t ${i}`)))
    for (const size of [7, 16, 17, 40]) {
      const root = run(treeHash(size, memoryHashReader(stored)))
      for (let leaf = 0; leaf < size; leaf++) {
        // Which tiles does reading this leaf touch? Tamper with each in turn.
        const seen: Array<Tile> = []
        const spy = tileServer(stored, H)
        run(tileHashReader({ size, root }, { readTiles: (t) => (seen.push(...t), spy.reader.readTiles(t)) }, H).readHashes([storedHashIndex(0, leaf)]))
        for (const target of seen) {
          const bad = tileServer(stored, H, (t, d) => (key(t) === key(target) ? Uint8Array.from(d, (b, i) => (i === 0 ? b ^ 1 : b)) : d))
          const thr = tileHashReader({ size, root }, bad.reader, H)
          const out = Effect.runSync(Effect.result(thr.readHashes([storedHashIndex(0, leaf)])))
          expect(Result.isFailure(out) && out.failure._tag, `size ${size}, leaf ${leaf}, tampered tile ${key(target)}`).toBe("TileMismatch")
          expect(bad.counts.saved).toBe(0)
        }
      }
    }
  })

  it("TestNewTilesForSize (height 10)", () => {
    for (const [o, n, want] of [[1, 1, 0], [100, 101, 1], [1023, 1025, 3], [1024, 1030, 1], [1030, 2000, 1], [1030, 10000, 10], [49516517, 49516586, 3]]) {
      expect(newTiles(o!, n!, 10), `${o} → ${n}`).toHaveLength(want!)
    }
  })
})

describe("C2SP tlog-tiles (height 8)", () => {
  it("the spec's examples: the tiles of trees of 70,000 and 256 leaves", () => {
    const t70k = newTiles(0, 70_000)
    expect(t70k.filter((t) => t.level === 0 && t.width === 256)).toHaveLength(273)
    expect(t70k.filter((t) => t.width < 256).map(key)).toEqual(["0/273/112", "1/1/17", "2/0/1"])
    expect(t70k.filter((t) => t.level === 1 && t.width === 256)).toHaveLength(1)
    expect(newTiles(0, 256).map(key)).toEqual(["0/0/256", "1/0/1"])
    expect(tileInTree({ level: 1, n: 1, width: 17 }, 70_000)).toBe(true)
    expect(tileInTree({ level: 1, n: 1, width: 18 }, 70_000)).toBe(false)
    expect(tileInTree({ level: ENTRIES_LEVEL, n: 273, width: 112 }, 70_000)).toBe(true)
    expect(tileInTree({ level: ENTRIES_LEVEL, n: 274, width: 1 }, 70_000)).toBe(false)
    expect(tileInTree({ level: 3, n: 0, width: 1 }, 70_000)).toBe(false)
  })

  it("tile paths (TestTilePath, in C2SP's form)", () => {
    const paths: Array<[string, Tile]> = [
      ["tile/0/001", { level: 0, n: 1, width: 256 }],
      ["tile/0/001.p/5", { level: 0, n: 1, width: 5 }],
      ["tile/5/x123/x456/078", { level: 5, n: 123456078, width: 256 }],
      ["tile/5/x123/x456/078.p/2", { level: 5, n: 123456078, width: 2 }],
      ["tile/0/x001/x234/067", { level: 0, n: 1234067, width: 256 }],
      ["tile/entries/x003/x057/500", { level: ENTRIES_LEVEL, n: 3057500, width: 256 }],
      ["tile/entries/000.p/255", { level: ENTRIES_LEVEL, n: 0, width: 255 }],
      ["tile/63/000", { level: 63, n: 0, width: 256 }]
    ]
    for (const [path, tile] of paths) {
      expect(tilePath(tile)).toBe(path)
      expect(Result.getOrThrow(parseTilePath(path))).toEqual(tile)
    }
    const bad = [
      "tile/5/123/456/078",
      "tile/-1/001",
      "tile/64/001",
      "tile/01/001",
      "tile/0/1",
      "tile/0/0001",
      "tile/0/x000/001",
      "tile/0/001.p/256",
      "tile/0/001.p/0",
      "tile/0/001.p/05",
      "tile/0/001.p",
      "tile/0/001/",
      "tile/data/001",
      "tiles/0/001",
      "tile/0/x001",
      "/tile/0/001",
      "tile/0/x1000/000",
      "tile/0/+01"
    ]
    for (const path of bad) expect(Result.isFailure(parseTilePath(path)), path).toBe(true)
  })

  it("entry bundles: length-prefixed entries whose leaf hashes are the level 0 tile, byte for byte", () => {
    const entries = Array.from({ length: 600 }, (_, i) => leafHash(text(`record ${i}`)))
    const stored = buildLog(entries)
    for (const t of newTiles(0, 600).filter((t) => t.level === 0)) {
      const bundle = formatEntryBundle(entries.slice(t.n * 256, t.n * 256 + t.width))
      expect(bundle.length).toBe(t.width * 34)
      const parsed = Result.getOrThrow(parseEntryBundle(bundle))
      expect(parsed.map((e) => hex(e))).toEqual(entries.slice(t.n * 256, t.n * 256 + t.width).map(hex))
      const tile = run(readTileData(t, memoryHashReader(stored)))
      expect(hex(tile)).toBe(parsed.map((e) => hex(leafHash(e))).join(""))
    }
    expect(hex(formatEntryBundle([new Uint8Array([7]), new Uint8Array()]))).toBe("00010700" + "00")
    expect(Result.isFailure(parseEntryBundle(new Uint8Array([0, 2, 1])))).toBe(true)
    expect(Result.isFailure(parseEntryBundle(new Uint8Array([0])))).toBe(true)
  })

  it("a TileHashReader over real-size tiles proves leaves across a level 1 tile, and refuses another tree's root", () => {
    const entries = Array.from({ length: 600 }, (_, i) => text(`r ${i}`))
    const stored = buildLog(entries)
    const empty = tileHashReader({ size: 0, root: new Uint8Array(32) }, tileServer(stored, 8).reader)
    expect(run(empty.readHashes([]))).toEqual([])
    expect(Effect.runSync(Effect.flip(empty.readHashes([0])))._tag).toBe("TreeRangeError")
    for (const size of [1, 255, 256, 257, 512, 600]) {
      const root = run(treeHash(size, memoryHashReader(stored)))
      const server = tileServer(stored, 8)
      const thr = tileHashReader({ size, root }, server.reader)
      for (const leaf of [0, Math.floor(size / 2), size - 1]) {
        expect(verifyInclusion(leaf, size, leafHash(entries[leaf]!), run(proveInclusion(leaf, size, thr)), root), `${leaf}/${size}`).toBe(true)
      }
      if (size > 1) expect(hex(run(treeHash(size - 1, thr)))).toBe(hex(run(treeHash(size - 1, memoryHashReader(stored)))))
      expect(run(thr.readHashes([]))).toEqual([])
      const other = tileHashReader({ size, root: leafHash(text("not the root")) }, server.reader)
      expect(Effect.runSync(Effect.flip(other.readHashes([0])))._tag).toBe("TileMismatch")
    }
  })
})
