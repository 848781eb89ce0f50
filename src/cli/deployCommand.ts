/**
 * `anchord deploy` and `anchord grant-anchorer`: the contract's deployment and role grants from the
 * node's own artifact, over any JSON-RPC endpoint, without Hardhat (docs/contract.md). The signer
 * key is read from EVM_PRIVATE_KEY, never from a flag (flags show in `ps` and shell history).
 */
import * as Path from "node:path"
// Sub-module imports, and viem and the deployer loaded only when a command runs: `anchord --help` starts fast.
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import type { Hex } from "viem"

const evm = Effect.promise(async () => ({ ...await import("../evm/deploy.ts"), ...await import("viem/accounts") }))

const ADDRESS = /^0x[0-9a-fA-F]{40}$/

const fail = (message: string) => Effect.fail({ message })

const signerKey = Effect.gen(function*() {
  const key = yield* Config.option(Config.Redacted("EVM_PRIVATE_KEY")).pipe(Effect.orElseSucceed(() => Option.none()))
  const value = Option.isSome(key) ? Redacted.value(key.value) : ""
  if (!/^0x[0-9a-fA-F]{64}$/.test(value)) return yield* fail("EVM_PRIVATE_KEY must be set to the signer's key (0x + 64 hex)")
  return value as Hex
})

const address = (name: string, value: Option.Option<string>) =>
  Option.isNone(value) ? Effect.succeed(undefined) : ADDRESS.test(value.value)
    ? Effect.succeed(value.value as Hex)
    : fail(`--${name} must be a 0x-prefixed 20-byte hex address`)

/** A refused command prints its reason (no stack, no key) and exits 1. */
const reported = <A>(effect: Effect.Effect<A, { readonly message: string }>) =>
  effect.pipe(Effect.catch((e) =>
    Effect.andThen(Console.error(`error: ${e.message}`), Effect.sync(() => {
      process.exitCode = 1
    }))
  ))

const promise = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    // viem's messages may quote the RPC URL (a provider key may be in it): keep the first line's reason only.
    catch: (e) => {
      const v = e as { shortMessage?: string; details?: string; message?: string }
      const reason = String(v.shortMessage ?? v.message).split("\n")[0]
      return { message: `${what}: ${reason}${v.details ? ` (${v.details.split("\n")[0]})` : ""}` }
    }
  })

const rpc = Flag.String("rpc").pipe(Flag.withDescription("JSON-RPC endpoint of the chain"))

export const deployCommand = Command.make("deploy", {
  rpc,
  admin: Flag.String("admin").pipe(Flag.optional, Flag.withDescription("Also give DEFAULT_ADMIN_ROLE to this address")),
  anchorer: Flag.String("anchorer").pipe(Flag.optional, Flag.withDescription("Also give ANCHORER_ROLE to this address")),
  networkId: Flag.String("network-id").pipe(Flag.optional, Flag.withDescription("File name of the record (default chain-<chainId>)")),
  out: Flag.String("out").pipe(Flag.withDefault("deployments"), Flag.withDescription("Directory of the deployment record"))
}, (o) =>
  reported(Effect.gen(function*() {
    const { ANCHORER_ROLE, DEFAULT_ADMIN_ROLE, deployAnchorRegistry, grantRole, writeDeploymentRecord } = yield* evm
    const privateKey = yield* signerKey
    const admin = yield* address("admin", o.admin)
    const anchorer = yield* address("anchorer", o.anchorer)
    const d = yield* promise("deployment failed", () => deployAnchorRegistry({ rpcUrl: o.rpc, privateKey }))
    yield* Console.log(
      `AnchorRegistry deployed at ${d.address} on chain ${d.chainId} (block ${d.blockNumber}, tx ${d.txHash}); deployer ${d.deployer} is admin and anchorer`
    )
    for (const [role, name, account] of [[ANCHORER_ROLE, "ANCHORER_ROLE", anchorer], [DEFAULT_ADMIN_ROLE, "DEFAULT_ADMIN_ROLE", admin]] as const) {
      if (account === undefined) continue
      const sent = yield* promise(`granting ${name}`, () => grantRole({ rpcUrl: o.rpc, privateKey, address: d.address, role, account }))
      yield* Console.log(`${name} ${sent ? "granted to" : "already held by"} ${account}`)
    }
    const file = yield* Effect.try({
      try: () => writeDeploymentRecord(o.out, Option.getOrElse(o.networkId, () => `chain-${d.chainId}`), d),
      catch: (e) => ({ message: (e as Error).message })
    })
    yield* Console.log(`wrote ${Path.relative(process.cwd(), file) || file}`)
  }))).pipe(Command.withDescription("Deploy AnchorRegistry (the node's artifact) with EVM_PRIVATE_KEY; writes deployments/<network-id>.json"))

export const grantAnchorerCommand = Command.make("grant-anchorer", {
  rpc,
  contract: Flag.String("contract").pipe(Flag.withDescription("AnchorRegistry address")),
  account: Flag.String("account").pipe(Flag.withDescription("Address to give ANCHORER_ROLE"))
}, (o) =>
  reported(Effect.gen(function*() {
    const { ANCHORER_ROLE, grantRole, privateKeyToAccount } = yield* evm
    const privateKey = yield* signerKey
    const contract = (yield* address("contract", Option.some(o.contract)))!
    const account = (yield* address("account", Option.some(o.account)))!
    const sent = yield* promise("granting ANCHORER_ROLE", () => grantRole({ rpcUrl: o.rpc, privateKey, address: contract, role: ANCHORER_ROLE, account }))
    yield* Console.log(sent
      ? `ANCHORER_ROLE granted to ${account} by ${privateKeyToAccount(privateKey).address}`
      : `${account} already holds ANCHORER_ROLE`)
  }))).pipe(Command.withDescription("Give ANCHORER_ROLE on a deployed AnchorRegistry to another signer (EVM_PRIVATE_KEY: an admin's key)"))
