/**
 * Logs: one structured line per significant event (node started, batch sent, batch confirmed,
 * delivery failed, database unavailable), never one per request. LOG_FORMAT=json (default when
 * stdout is not a terminal) or pretty; LOG_LEVEL=trace|debug|info|warn|error|fatal|none (any case).
 */
import { Config, Effect, Layer, Logger, References } from "effect"

export const LoggingLayer = Layer.unwrap(Effect.gen(function*() {
  const format = yield* Config.Literals(["json", "pretty"] as const, "LOG_FORMAT").pipe(
    Config.withDefault(process.stdout.isTTY ? "pretty" as const : "json" as const)
  )
  const levels = { all: "All", trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", warning: "Warn", error: "Error", fatal: "Fatal",
    none: "None" } as const
  const name = (yield* Config.String("LOG_LEVEL").pipe(Config.withDefault("Info"))).toLowerCase()
  const level = name in levels ? levels[name as keyof typeof levels] : yield* Effect.die(
    new Error(`LOG_LEVEL must be one of ${Object.keys(levels).join(", ")} (any case), not ${JSON.stringify(name)}`)
  )
  return Layer.mergeAll(
    Logger.layer([format === "json" ? Logger.consoleJson : Logger.consolePretty()]),
    Layer.succeed(References.MinimumLogLevel, level)
  )
}))
