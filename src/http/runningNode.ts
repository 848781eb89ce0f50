/**
 * The address a node running on this data directory listens at, for the CLI's one-time links
 * (`anchord users sign-in-link`, `invite`): a node writes `<dataDir>/node-url.json` ({pid, url}) once it
 * listens and removes it when it stops; a CLI command beside it reads it, as it finds that node's
 * embedded database, so `PORT=8180 npm start` and a plain `npx anchord users sign-in-link` agree.
 * PUBLIC_URL, when the CLI has it, still wins (src/cli/operator.ts).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect } from "effect"

const urlFile = (dataDir: string) => Path.join(dataDir, "node-url.json")

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM" // alive, another user's
  }
}

/** Scoped: the file while the node runs, removed (if still this process's) when the scope closes. Best effort: a read-only data directory only loses the hint. */
export const recordRunningUrl = (dataDir: string, url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      try {
        Fs.writeFileSync(urlFile(dataDir), JSON.stringify({ pid: process.pid, url }) + "\n")
      } catch {
        // no data directory to write in (e.g. `anchord start` with DATABASE_URL): nothing to share
      }
    }),
    () =>
      Effect.sync(() => {
        try {
          if (JSON.parse(Fs.readFileSync(urlFile(dataDir), "utf8")).pid === process.pid) Fs.rmSync(urlFile(dataDir), { force: true })
        } catch {
          // already gone
        }
      })
  )

/** The URL of the node running on this data directory, if one is (its process alive); else undefined. */
export const runningNodeUrl = (dataDir: string): string | undefined => {
  try {
    const { pid, url } = JSON.parse(Fs.readFileSync(urlFile(dataDir), "utf8")) as { pid?: unknown; url?: unknown }
    return typeof pid === "number" && Number.isInteger(pid) && pid > 0 && typeof url === "string" && /^https?:\/\//.test(url) && isAlive(pid)
      ? url
      : undefined
  } catch {
    return undefined
  }
}
