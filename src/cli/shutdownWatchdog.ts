/**
 * A bound on graceful shutdown. The node stops on SIGTERM/SIGINT by interrupting its main fiber and
 * releasing its layers (HTTP server, webhook drain of at most 15 s, database pool). Should a
 * finalizer never finish (seen twice in ~40 runs after benchmark load: every socket closed, one
 * fiber still looping on a 60 s sleep like the database pool's idle timer, the process never
 * exiting; the cause is not found yet), the process would hang until killed. After
 * SHUTDOWN_TIMEOUT_MS it logs one line, with what still keeps the event loop alive counted by kind,
 * and exits with code 1. Nothing is lost by that: a 202 is only
 * sent after its records are committed, and unfinished background work resumes at the next start.
 */
/** The event loop's active resources, counted by kind (e.g. { TCPSocketWrap: 2, Timeout: 1 }). */
const pendingResources = (): Record<string, number> => {
  const counts: Record<string, number> = {}
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1
  return counts
}

export interface WatchdogTarget {
  readonly once: (signal: "SIGTERM" | "SIGINT", listener: () => void) => unknown
}

/** The signal that started the shutdown, once one has (for the node's "stopping" line). */
export const shutdownSignal: { current: string | undefined } = { current: undefined }

export const armShutdownWatchdog = (
  timeoutMillis: number,
  target: WatchdogTarget = process,
  exit: (code: number) => void = (code) => process.exit(code),
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`)
): void => {
  let armed = false
  const arm = (signal: string) => () => {
    if (armed) return
    armed = true
    shutdownSignal.current = signal
    const timer = setTimeout(() => {
      log(JSON.stringify({
        message: `graceful shutdown did not finish within ${timeoutMillis} ms of ${signal}: exiting`,
        level: "ERROR",
        timestamp: new Date().toISOString(),
        // What still keeps the event loop alive, by kind (sockets, timers, ...): the lead for the
        // cause of a hang that has not been reproduced on purpose yet.
        pending: pendingResources()
      }))
      exit(1)
    }, timeoutMillis)
    timer.unref() // a shutdown that finishes is never held up by it
  }
  target.once("SIGTERM", arm("SIGTERM"))
  target.once("SIGINT", arm("SIGINT"))
}
