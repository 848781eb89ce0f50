/**
 * The handler of `anchord monitor` (its flags are in src/cli/commands.ts): runs the audit and sets the exit code:
 * 0 consistent, 1 an inconsistency (printed with its reason), 2 a source it could not read.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Hex } from "viem"
import { rpcClient } from "../verify/evm.ts"
import { runMonitor } from "./monitor.ts"
import { httpTiles } from "./tiles.ts"

export interface MonitorFlags {
  readonly rpc: string
  readonly log: string
  readonly registry: string
  readonly key: Option.Option<string>
  readonly fromBlock: number
  readonly follow: boolean
  readonly intervalMs: number
}

const fail = (code: 1 | 2, message: string) =>
  Effect.andThen(Console.error(`anchord monitor: ${message}`), Effect.sync(() => {
    process.exitCode = code
  }))

export const monitor = (o: MonitorFlags) => {
  if (!/^0x[0-9a-fA-F]{40}$/.test(o.registry)) return fail(2, `--registry: ${JSON.stringify(o.registry)} is not an address (0x and 40 hex digits)`)
  return runMonitor({
    rpc: rpcClient(o.rpc),
    registry: o.registry.toLowerCase() as Hex,
    tiles: httpTiles(o.log),
    key: Option.getOrUndefined(o.key),
    fromBlock: BigInt(o.fromBlock),
    follow: o.follow,
    intervalMs: o.intervalMs,
    print: (line) => Console.log(line)
  }).pipe(
    Effect.catch((e: unknown) => {
      const tagged = e as { readonly _tag?: string; readonly message?: string }
      if (tagged._tag === "Inconsistency") return fail(1, `INCONSISTENT: ${tagged.message}`)
      return fail(2, `could not check: ${tagged.message ?? String(e)}`)
    })
  )
}
