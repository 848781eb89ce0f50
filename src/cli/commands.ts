/**
 * The `anchord` command line (SPEC 8): start, dev, doctor, monitor, migrate, accounts, keys, users, fabric-devpeer,
 * deploy, grant-anchorer, verify. Entry: src/cli/main.ts (which runs `verify` without loading this module).
 *
 * This module holds only what `--help` shows (names, arguments, flags, descriptions). Each handler
 * imports what it runs (./node.ts: the node and its database; ./operator.ts: accounts, keys, users) when
 * it runs, so `anchord --help` or a mistyped flag never loads the server, PostgreSQL's client or the
 * chains' libraries (docs/operations.md, "How fast the CLI starts").
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
// Sub-module imports (not the "effect" barrel): the CLI must start fast.
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { PlanNames } from "../auth/plans.ts"
import { verifyCommand } from "../verify/command.ts"
import { VERSION } from "../version.ts"
import { deployCommand, grantAnchorerCommand } from "./deployCommand.ts"

const node = Effect.promise(() => import("./node.ts"))
const operator = Effect.promise(() => import("./operator.ts"))

const start = Command.make("start", {}, () => Effect.flatMap(node, (m) => m.start)).pipe(
  Command.withDescription("Run the node (production): everything from environment variables")
)

const dev = Command.make("dev", {}, () => Effect.flatMap(node, (m) => m.dev)).pipe(
  Command.withDescription("Run a local node: embedded PostgreSQL, local chains, a test account and key")
)

const doctor = Command.make("doctor", {
  json: Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print JSON: [{check, status, message, fix}]")),
  webhookTestUrl: Flag.String("webhook-test-url").pipe(Flag.optional, Flag.withDescription("also POST an unsigned test to this receiver")),
  batches: Flag.Int("batches").pipe(Flag.withDefault(100), Flag.withDescription("batches each EVM signer's balance should pay for"))
}, (o) => Effect.flatMap(node, (m) => m.doctor(o))).pipe(
  Command.withDescription("Check a production configuration (database, chains, TLS, webhooks, Redis, clocks): exit 1 on a fatal problem")
)

const monitor = Command.make("monitor", {
  rpc: Flag.String("rpc").pipe(Flag.withDescription("the network's JSON-RPC endpoint (your own: the chain is what is trusted)")),
  log: Flag.String("log").pipe(Flag.withDescription("the log's tiles URL (the node serves <log>/checkpoint and <log>/tile/…)")),
  registry: Flag.String("registry").pipe(Flag.withDescription("the AnchorRegistry contract's address")),
  key: Flag.String("key").pipe(Flag.optional, Flag.withDescription("the log's checkpoint key (a signed-note verifier key): check the checkpoint's signature")),
  fromBlock: Flag.Int("from-block").pipe(Flag.withDefault(0), Flag.withDescription("the contract's deployment block (faster)")),
  follow: Flag.Boolean("follow").pipe(Flag.withDefault(false), Flag.withDescription("keep watching")),
  intervalMs: Flag.Int("interval-ms").pipe(Flag.withDefault(15_000), Flag.withDescription("with --follow: between rounds"))
}, (o) => Effect.flatMap(Effect.promise(() => import("../monitor/command.ts")), (m) => m.monitor(o))).pipe(
  Command.withDescription("Audit a network's transparency log against the chain: exit 1 on the first inconsistency")
)

const migrate = Command.make("migrate", {}, () => Effect.flatMap(node, (m) => m.migrate)).pipe(
  Command.withDescription("Apply database migrations")
)

const json = Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print JSON"))

const accountsCreate = Command.make("create", {
  name: Argument.String("name"),
  email: Flag.String("email").pipe(Flag.optional),
  plan: Flag.Literals("plan", PlanNames).pipe(Flag.withDefault("FREE" as const)),
  ratePerSecond: Flag.Int("rate-per-second").pipe(Flag.optional, Flag.withDescription("ENTERPRISE only")),
  chain: Flag.Literals("default-chain", ["evm", "fabric", "hybrid"]).pipe(Flag.withDefault("evm" as const)),
  activate: Flag.Boolean("activate").pipe(Flag.withDefault(false)),
  json
}, (o) => Effect.flatMap(operator, (m) => m.accountsCreate(o)))

const accountsActivate = Command.make("activate", { accountId: Argument.String("account-id"), json },
  (o) => Effect.flatMap(operator, (m) => m.accountsActivate(o)))

const accountsSuspend = Command.make("suspend", { accountId: Argument.String("account-id"), json },
  (o) => Effect.flatMap(operator, (m) => m.accountsSuspend(o))).pipe(
    Command.withDescription("Suspend an account: its API keys stop working, its data stays")
  )

const accountsPlan = Command.make("plan", {
  accountId: Argument.String("account-id"),
  plan: Argument.Literals("plan", PlanNames),
  ratePerSecond: Flag.Int("rate-per-second").pipe(Flag.optional, Flag.withDescription("ENTERPRISE only")),
  json
}, (o) => Effect.flatMap(operator, (m) => m.accountsPlan(o))).pipe(Command.withDescription("Change an account's plan"))

const accountsList = Command.make("list", { json }, (o) => Effect.flatMap(operator, (m) => m.accountsList(o)))

const keysCreate = Command.make("create", {
  accountId: Argument.String("account-id"),
  environment: Flag.Literals("env", ["test", "live"]).pipe(Flag.withDefault("test" as const)),
  name: Flag.String("name").pipe(Flag.optional),
  expiresInDays: Flag.Int("expires-in-days").pipe(Flag.optional),
  json
}, (o) => Effect.flatMap(operator, (m) => m.keysCreate(o)))

const keysList = Command.make("list", { accountId: Argument.String("account-id").pipe(Argument.optional), json },
  (o) => Effect.flatMap(operator, (m) => m.keysList(o)))

const keysRevoke = Command.make("revoke", { keyId: Argument.String("key-id"), json }, (o) => Effect.flatMap(operator, (m) => m.keysRevoke(o)))

const accounts = Command.make("accounts").pipe(
  Command.withDescription("Manage accounts"),
  Command.withSubcommands([accountsCreate, accountsActivate, accountsSuspend, accountsPlan, accountsList])
)
const keys = Command.make("keys").pipe(
  Command.withDescription("Manage API keys"),
  Command.withSubcommands([keysCreate, keysList, keysRevoke])
)

const usersInvite = Command.make("invite", {
  accountId: Argument.String("account-id"),
  email: Flag.String("email"),
  role: Flag.Literals("role", ["admin", "viewer"]).pipe(Flag.withDefault("viewer" as const)),
  json
}, (o) => Effect.flatMap(operator, (m) => m.usersInvite(o))).pipe(
  Command.withDescription("Invite a member of an account to the console (prints a one-time link)")
)

const usersInviteOperator = Command.make("invite-operator", { email: Flag.String("email"), json },
  (o) => Effect.flatMap(operator, (m) => m.usersInviteOperator(o))).pipe(
    Command.withDescription("Invite an operator (every account) to the console (prints a one-time link)")
  )

const usersSignInLink = Command.make("sign-in-link", { email: Argument.String("email"), json }, (o) => Effect.flatMap(operator, (m) => m.usersSignInLink(o)))
  .pipe(
    Command.withDescription("A one-time sign-in link for a console user (e.g. who forgot their password, or the dev operator)")
  )

const usersList = Command.make("list", { accountId: Argument.String("account-id").pipe(Argument.optional), json },
  (o) => Effect.flatMap(operator, (m) => m.usersList(o))).pipe(Command.withDescription("List an account's members, or the operators"))

const users = Command.make("users").pipe(
  Command.withDescription("Manage console users (operators and account members)"),
  Command.withSubcommands([usersInvite, usersInviteOperator, usersSignInLink, usersList])
)

const fabricDevpeer = Command.make("fabric-devpeer", {
  port: Flag.Int("port").pipe(Flag.withDefault(7051), Flag.withDescription("0 picks a free port")),
  host: Flag.String("host").pipe(Flag.withDefault("127.0.0.1")),
  channel: Flag.String("channel").pipe(Flag.withDefault("anchord")),
  chaincode: Flag.String("chaincode").pipe(Flag.withDefault("anchord")),
  mspId: Flag.String("msp-id").pipe(Flag.withDefault("AnchordDevMSP")),
  dataDir: Flag.String("data-dir").pipe(Flag.optional, Flag.withDescription("default: ANCHORD_DATA_DIR/fabric-devpeer"))
}, (o) => Effect.flatMap(node, (m) => m.fabricDevpeer(o))).pipe(
  Command.withDescription("Run the Fabric gateway dev peer alone (a development peer, not a Fabric network)")
)

export const cli = Command.make("anchord").pipe(
  Command.withDescription("anchord: a self-hostable record anchoring node"),
  Command.withSubcommands([start, dev, doctor, monitor, migrate, accounts, keys, users, fabricDevpeer, deployCommand, grantAnchorerCommand, verifyCommand])
)

cli.pipe(
  Command.run({ version: VERSION }),
  Effect.provide(NodeServices.layer),
  // A refused operator command has printed its reason and set process.exitCode: keep that code.
  NodeRuntime.runMain({
    teardown: (exit, onExit) => Runtime.defaultTeardown(exit, (code) => onExit(code === 0 && process.exitCode ? Number(process.exitCode) : code))
  })
)
