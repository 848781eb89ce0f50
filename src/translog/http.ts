/**
 * The transparency log's read API (docs/transparency-log.md, "Reading the log"), C2SP tlog-tiles under
 * `/log/<networkId>`: `checkpoint` (the latest published signed note), `tile/<L>/<N>[.p/<W>]` (hash tiles) and
 * `tile/entries/<N>[.p/<W>]` (entry bundles of the 32-byte record hashes), for tiles inside the latest published
 * checkpoint's tree only: the tentative tail (sent, not yet confirmed) is never shown.
 *
 * A raw route, not HttpApi: a tile path has a variable number of segments, and its answers are bytes. Every
 * refusal is the API's error body: 400 for a malformed tile path, 404 for a network without a log, a tile
 * outside the tree or no signed checkpoint yet, 405 for a method other than GET and HEAD.
 *
 * Access: LOG_PUBLIC=true serves the logs to anyone (counted by address, as the API's public routes);
 * otherwise an API key of the network's environment is required (a key of another environment sees 404, as
 * for a network it does not have). `anchord dev` defaults LOG_PUBLIC to true.
 */
import { Config, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorBody, type ErrorCode, type ServiceUnavailable, statusOf, type TooManyRequests, type Unauthorized } from "../api/errors.ts"
import { ConfiguredNetworks } from "../anchoring/Networks.ts"
import { Admission, type Admitted, type Refused } from "../auth/Admission.ts"
import { databaseUnavailable, isConnectionFailure } from "../db/errors.ts"
import { wireResponse } from "../http/envelope.ts"
import { ENTRIES_LEVEL, formatEntryBundle, parseTilePath, readTileData, TILE_HEIGHT, tileInTree } from "../tlog/tiles.ts"
import { LogDevDefault, LogKey } from "./key.ts"
import { LogStore } from "./LogStore.ts"

/** A full tile never changes: C2SP tlog-tiles lets it be cached for good. */
const CACHE_FULL = "public, max-age=31536000, immutable"
/** The checkpoint and partial tiles are superseded as the log grows: cached briefly. */
const CACHE_SHORT = "public, max-age=10"

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

const refuse = (code: ErrorCode, message: string, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.jsonUnsafe(errorBody(code, message), { status: statusOf(code), headers })

/** Whether the logs are served to anyone: LOG_PUBLIC, or `anchord dev`'s default. */
const logPublic = Effect.gen(function*() {
  const dev = yield* LogDevDefault
  return yield* Config.Boolean("LOG_PUBLIC").pipe(Config.withDefault(dev))
})

export const LogHttpLayer = Layer.unwrap(Effect.gen(function*() {
  const admission = yield* Admission
  const networks = yield* ConfiguredNetworks
  const logs = yield* LogStore
  const { signing } = yield* LogKey
  const isPublic = yield* logPublic

  const body = (request: HttpServerRequest.HttpServerRequest, bytes: Uint8Array, contentType: string, cacheControl: string) =>
    request.method === "HEAD"
      ? HttpServerResponse.empty({ status: 200,
        headers: { "content-type": contentType, "content-length": String(bytes.byteLength), "cache-control": cacheControl } })
      : HttpServerResponse.uint8Array(bytes, { contentType, headers: { "cache-control": cacheControl } })

  /** The answer for a network the caller may read, by what follows `/log/<networkId>/`. */
  const answer = Effect.fn("LogHttp.answer")(function*(request: HttpServerRequest.HttpServerRequest, networkId: string, rest: string) {
    if (rest === "checkpoint") {
      if (signing._tag === "None") return refuse("NOT_FOUND", "This node signs no checkpoints: it has no log key (LOG_KEY_FILE)")
      const latest = yield* logs.latestCheckpoint(networkId)
      if (latest?.note == null) return refuse("NOT_FOUND", `No signed checkpoint of network ${networkId} published yet`)
      return body(request, new TextEncoder().encode(latest.note), "text/plain; charset=utf-8", CACHE_SHORT)
    }
    const parsed = parseTilePath(rest)
    if (Result.isFailure(parsed)) return refuse("VALIDATION_ERROR", `Not a log path: ${parsed.failure.message}`)
    const tile = parsed.success
    const latest = yield* logs.latestCheckpoint(networkId)
    if (latest === undefined || !tileInTree(tile, latest.size)) {
      return refuse("NOT_FOUND", `Tile ${rest} is not in the log of ${networkId} at its latest checkpoint (size ${latest?.size ?? 0})`)
    }
    const cache = tile.width === 2 ** TILE_HEIGHT ? CACHE_FULL : CACHE_SHORT
    if (tile.level === ENTRIES_LEVEL) {
      const start = tile.n * 2 ** TILE_HEIGHT
      return body(request, formatEntryBundle(yield* logs.entries(networkId, start, start + tile.width)), "application/octet-stream", cache)
    }
    // Inside a published tree every hash is stored: a range error would be this store's bug.
    const data = yield* readTileData(tile, logs.hashReader(networkId)).pipe(Effect.catchTag("TreeRangeError", Effect.die))
    return body(request, data, "application/octet-stream", cache)
  })

  const notFound = (networkId: string) => refuse("NOT_FOUND", `No transparency log for network ${JSON.stringify(networkId).slice(1, -1)}`)

  const serve = (request: HttpServerRequest.HttpServerRequest) => {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return Effect.succeed(refuse("METHOD_NOT_ALLOWED", `Method ${request.method} is not allowed on the log`, { allow: "GET, HEAD" }))
    }
    const match = /^\/log\/([^/]+)\/(.+)$/.exec(pathOf(request.url))
    const networkId = match?.[1] ?? ""
    const network = networks.find((n) => n.networkId === networkId)
    const admitted: Effect.Effect<Admitted, Refused<Unauthorized | TooManyRequests | ServiceUnavailable>> = isPublic
      ? admission.byAddress(request)
      : admission.byKey(request)
    return Effect.matchEffect(admitted, {
      onFailure: (refused) => Effect.succeed(wireResponse(refused.error, refused.headers)),
      onSuccess: ({ headers, principal }) => {
        const readable = network !== undefined && match !== null && (isPublic || principal?.environment === network.environment)
        const response = readable ? answer(request, networkId, match[2]!) : Effect.succeed(notFound(networkId))
        return response.pipe(
          Effect.catch((e) => isConnectionFailure(e) ? Effect.succeed(wireResponse(databaseUnavailable())) : Effect.die(e)),
          Effect.map((r) => HttpServerResponse.setHeaders(r, headers))
        )
      }
    })
  }

  return HttpRouter.add("*", "/log/*", serve)
}))
