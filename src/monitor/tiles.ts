/**
 * A node's log as C2SP tlog-tiles serves it, read over HTTP: the checkpoint (a signed note), hash tiles and entry
 * bundles under one URL prefix. Nothing read here is trusted: the monitor checks every tile against a checkpoint
 * the chain holds (src/tlog/tileReader.ts) and every entry against its leaf hash.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { type Tile, tilePath } from "../tlog/tiles.ts"
import type { TileReader } from "../tlog/tileReader.ts"

/** The node's log could not be read (unreachable, a status other than 200, too large): could not check. */
export class TilesUnavailable extends Data.TaggedError("TilesUnavailable")<{ readonly message: string }> {}

/** The most a tile, a bundle or a checkpoint may weigh (a full entry bundle of 32-byte hashes is 8.5 KiB). */
const MAX_BYTES = 1 << 20

export interface TilesSource extends TileReader<TilesUnavailable> {
  /** The node's current checkpoint, as served (a signed note). */
  readonly checkpoint: Effect.Effect<string, TilesUnavailable>
  /** Any file of the log by its path (tile paths, entry bundles). */
  readonly file: (path: string) => Effect.Effect<Uint8Array, TilesUnavailable>
}

export const httpTiles = (prefix: string, timeoutMs = 15_000): TilesSource => {
  const base = prefix.replace(/\/+$/, "")
  const file = (path: string) =>
    Effect.tryPromise({
      try: async (signal) => {
        const url = `${base}/${path}`
        const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) })
        if (response.status !== 200) throw new TilesUnavailable({ message: `${url}: HTTP ${response.status}` })
        const bytes = new Uint8Array(await response.arrayBuffer())
        if (bytes.length > MAX_BYTES) throw new TilesUnavailable({ message: `${url}: larger than ${MAX_BYTES} bytes` })
        return bytes
      },
      catch: (e) => e instanceof TilesUnavailable ? e : new TilesUnavailable({ message: `${base}/${path}: ${e instanceof Error ? e.message : String(e)}` })
    })
  return {
    file,
    checkpoint: Effect.map(file("checkpoint"), (bytes) => new TextDecoder().decode(bytes)),
    readTiles: (tiles: ReadonlyArray<Tile>) => Effect.forEach(tiles, (t) => file(tilePath(t)), { concurrency: 4 })
  }
}
