/**
 * Reads a request body with a size limit. On Node it listens to the IncomingMessage directly: the
 * generic stream path of `request.arrayBuffer` costs several times more CPU per request, and this
 * is the ingest hot path. Elsewhere (other platforms, web handlers in tests) it falls back to it.
 */
import * as Http from "node:http"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"
import * as ByteSize from "effect/ByteSize"
import { HttpIncomingMessage, type HttpServerRequest } from "effect/http"

export type BodyRead =
  | { readonly _tag: "Body"; readonly bytes: Buffer }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Aborted" }
  /** The bytes being received across all requests would pass the budget (load shedding). */
  | { readonly _tag: "Overloaded" }

/**
 * Set on a request whose body node:http could not parse (a broken chunk, the connection half-closed
 * before the Content-Length was reached: `clientError`, src/app/server.ts). No more of it will ever
 * arrive, so a read answers `Aborted` at once instead of waiting for the request timeout.
 */
const broken = Symbol.for("anchord/http/bodyBroken")

/** Marks the request's body as broken and tells a read in progress. */
export const breakBody = (source: Http.IncomingMessage, error: Error) => {
  ;(source as { [broken]?: Error })[broken] = error
  if (source.listenerCount("error") > 0) source.emit("error", error)
}

/** Whether node:http gave up on this request's body (`breakBody`). */
export const bodyBroken = (request: HttpServerRequest.HttpServerRequest): boolean =>
  (request.source as { [broken]?: Error } | undefined)?.[broken] !== undefined

/**
 * The request bytes being received at once, across every connection: thousands of slow clients each
 * trickling a 1 MiB body must not add up to gigabytes. Reserved chunk by chunk, released when a body is
 * complete or given up.
 */
export class BodyBudget {
  private used = 0
  readonly maxBytes: number
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes
  }
  reserve(n: number): boolean {
    if (this.used + n > this.maxBytes) return false
    this.used += n
    return true
  }
  release(n: number): void {
    this.used -= n
  }
}

export const unlimitedBodyBudget = new BodyBudget(Number.MAX_SAFE_INTEGER)

/** The node's one budget (HTTP_MAX_BODY_BYTES_IN_FLIGHT), shared by the framing middleware and the ingest fast path. */
export class BodyBudgetService extends Context.Service<BodyBudgetService, BodyBudget>()("anchord/http/BodyBudget") {
  static readonly layer = Layer.effect(BodyBudgetService, Effect.map(AppConfig, (c) => new BodyBudget(c.httpMaxBodyBytesInFlight)))
}

export const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number,
  budget: BodyBudget = unlimitedBodyBudget
): Effect.Effect<BodyRead> => {
  const source = request.source
  if (!(source instanceof Http.IncomingMessage)) {
    return request.arrayBuffer.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBytes)),
      Effect.map((b): BodyRead => b.byteLength > maxBytes ? { _tag: "TooLarge" } : { _tag: "Body", bytes: Buffer.from(b) }),
      Effect.catch(() => Effect.succeed<BodyRead>({ _tag: "TooLarge" }))
    )
  }
  if ((source as { [broken]?: Error })[broken] !== undefined) return Effect.succeed({ _tag: "Aborted" })
  return Effect.callback<BodyRead>((resume) => {
    // `Expect: 100-continue`: the client waits for this before sending the body. Sent only now that the
    // body is wanted, so a request refused before (401, 415, 413 by Content-Length) never sends it.
    if (source.headers.expect !== undefined) (request as { writeContinue?: () => void }).writeContinue?.()
    const chunks: Array<Buffer> = []
    let size = 0
    const detach = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
      source.off("aborted", onError)
      budget.release(size)
    }
    const done = (result: BodyRead) => {
      detach()
      resume(Effect.succeed(result))
    }
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > maxBytes) {
        done({ _tag: "TooLarge" })
        source.resume() // discard the rest; the 413 goes out without waiting for it
        return
      }
      if (!budget.reserve(chunk.length)) {
        done({ _tag: "Overloaded" })
        source.resume()
        return
      }
      size += chunk.length
      chunks.push(chunk)
    }
    const onEnd = () => done({ _tag: "Body", bytes: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size) })
    const onError = () => done({ _tag: "Aborted" })
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    source.once("aborted", onError)
    // Interrupted (the request given up): stop listening and give the bytes back.
    return Effect.sync(detach)
  })
}
