/**
 * Services a test needs from the machine (the suite starts everything else itself, see
 * docs/testing.md). A test that needs one checks it is reachable first: when it is not, the test is
 * skipped with the reason in its name, except under CI=true, where a missing service is a failure.
 */
import * as Net from "node:net"

/** True under CI (CI=true or CI=1): a service the suite needs must be there. */
export const isCI = (): boolean => process.env.CI === "true" || process.env.CI === "1"

/** Whether a TCP connection to host:port opens within timeoutMs (never throws, never waits longer). */
export const tcpReachable = (host: string, port: number, timeoutMs = 2_000): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = Net.connect({ host, port })
    const done = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })

export interface RequiredService {
  /** The URL tests give the node (e.g. redis://127.0.0.1:6379). */
  readonly url: string
  /** host:port, as shown in messages. */
  readonly address: string
  readonly reachable: boolean
  /** Skip the tests that need it: unreachable, and not under CI. */
  readonly skip: boolean
  /** Appended to the describe's name: why it is skipped (or, under CI, why it fails); else "". */
  readonly nameSuffix: string
  /** For beforeAll: throws the reason when the service is unreachable (only reached under CI). */
  readonly require: () => void
}

const service = async (what: string, url: string, defaultPort: number, envName: string): Promise<RequiredService> => {
  const parsed = new URL(url)
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1")
  const port = parsed.port === "" ? defaultPort : Number(parsed.port)
  const address = `${parsed.hostname}:${port}`
  const reachable = await tcpReachable(host, port)
  const ci = isCI()
  const reason = `no ${what} at ${address} (${envName} sets the address)`
  return {
    url,
    address,
    reachable,
    skip: !reachable && !ci,
    nameSuffix: reachable ? "" : ci ? ` — ${reason}: required under CI=true` : ` — skipped: ${reason}`,
    require: () => {
      if (!reachable) throw new Error(`${reason}: a missing ${what} is a failure under CI=true`)
    }
  }
}

/** Redis for the shared-limits tests: TEST_REDIS_URL, or redis://127.0.0.1:6379. */
export const probeRedis = (): Promise<RequiredService> => service("Redis", process.env.TEST_REDIS_URL || "redis://127.0.0.1:6379", 6379, "TEST_REDIS_URL")
