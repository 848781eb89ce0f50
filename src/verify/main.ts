/**
 * Lean entry of `anchord verify` (see src/cli/main.ts): the verify command alone, under the same
 * `anchord` root so usage and help read the same as with the full command line.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
// Sub-module imports (not the "effect" barrel): `anchord verify` must start fast (scripts/bench-verify.ts).
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Command from "effect/cli/Command"
import { VERSION } from "../version.ts"
import { verifyCommand } from "./command.ts"

Command.make("anchord").pipe(
  Command.withDescription("anchord: a self-hostable record anchoring node"),
  Command.withSubcommands([verifyCommand]),
  Command.run({ version: VERSION }),
  Effect.provide(NodeServices.layer),
  // The verdict is in process.exitCode (0 verified, 1 not verified, 2 could not check): keep it.
  NodeRuntime.runMain({
    teardown: (exit, onExit) => Runtime.defaultTeardown(exit, (code) => onExit(code === 0 && process.exitCode ? Number(process.exitCode) : code))
  })
)
