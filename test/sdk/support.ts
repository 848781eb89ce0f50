/**
 * SDK test kit: a TCP proxy on loopback that can cut the connection carrying the next response (the
 * server did the work, the client never hears of it: a real lost response, as a network failure
 * makes it), and a fetch that records what the SDK sent and got.
 */
import { createServer, connect, type Socket } from "node:net"

export interface DroppingProxy {
  readonly url: string
  /** Cut the connection when the next response starts: the request reached the server, its answer is lost. */
  dropNextResponse: () => void
  /** How many responses were dropped. */
  readonly dropped: () => number
  readonly close: () => Promise<void>
}

export const droppingProxy = async (target: { host: string; port: number }): Promise<DroppingProxy> => {
  const sockets = new Set<Socket>()
  let armed = false
  let dropped = 0
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    sockets.add(client).add(upstream)
    const close = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on("data", (chunk) => upstream.write(chunk))
    upstream.on("data", (chunk) => {
      if (armed) {
        armed = false
        dropped++
        close()
        return
      }
      client.write(chunk)
    })
    client.on("error", close).on("close", close)
    upstream.on("error", close).on("close", close)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    dropNextResponse: () => {
      armed = true
    },
    dropped: () => dropped,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}

export interface Exchange {
  readonly method: string
  readonly path: string
  readonly idempotencyKey: string | null
  readonly sentAt: number
  /** The status, or the error's text when no response came. */
  readonly outcome: number | string
  readonly retryAfter: string | null
  readonly at: number
}

/** The global fetch, recording every exchange; `onResponse` may act on one (e.g. end an outage). */
export const recordingFetch = (onResponse: (e: Exchange) => void | Promise<void> = () => {}) => {
  const exchanges: Array<Exchange> = []
  const wrapped: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    const headers = new Headers(init?.headers)
    const base = { method: init?.method ?? "GET", path: url.pathname, idempotencyKey: headers.get("idempotency-key"), sentAt: Date.now() }
    try {
      const response = await fetch(input, init)
      const e = { ...base, outcome: response.status, retryAfter: response.headers.get("retry-after"), at: Date.now() }
      exchanges.push(e)
      await onResponse(e)
      return response
    } catch (error) {
      exchanges.push({ ...base, outcome: error instanceof Error ? error.message : String(error), retryAfter: null, at: Date.now() })
      throw error
    }
  }
  return { fetch: wrapped, exchanges }
}
