/**
 * Logs: one structured line per significant event (node started, batch sent, batch confirmed,
 * delivery failed, database unavailable), never one per request. LOG_FORMAT=json (default when
 * stdout is not a terminal) or pretty; LOG_LEVEL=Trace|Debug|Info|Warn|Error|Fatal|None.
 */
import { Config, Effect, Layer, Logger, References } from "effect"

export const LoggingLayer = Layer.unwrap(Effect.gen(function*() {
  const format = yield* Config.Literals(["json", "pretty"] as const, "LOG_FORMAT").pipe(
    Config.withDefault(process.stdout.isTTY ? "pretty" as const : "json" as const)
  )
  const level = yield* Config.Literals(["All", "Trace", "Debug", "Info", "Warn", "Error", "Fatal", "None"] as const, "LOG_LEVEL").pipe(
    Config.withDefault("Info" as const)
  )
  return Layer.mergeAll(
    Logger.layer([format === "json" ? Logger.consoleJson : Logger.consolePretty()]),
    Layer.succeed(References.MinimumLogLevel, level)
  )
}))
