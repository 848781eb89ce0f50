/**
 * `anchord doctor`'s checks of the anchoring networks (docs/doctor.md): an EVM network's RPC, contract, anchorer
 * role, balance and clock; a Fabric network's identity and chaincode. Bounded in time and never printing a secret,
 * like the other checks (./checks.ts).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { Effect, Redacted } from "effect"
import { createPublicClient, http, keccak256, toHex, type PublicClient } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { anchorRegistryAbi } from "../evm/AnchorRegistry.abi.ts"
import artifact from "../evm/AnchorRegistry.artifact.json" with { type: "json" }
import type { EvmNetworkConfig } from "../evm/config.ts"
import { makeFabricClient } from "../fabric/client.ts"
import type { FabricNetworkConfig } from "../fabric/config.ts"
import { reason } from "./checks.ts"
import { type CheckResult, fatal, ok, warn } from "./result.ts"

// ---- EVM networks -------------------------------------------------------------------------------

const ANCHORER_ROLE = keccak256(toHex("ANCHORER_ROLE"))

/** Gas one `anchor(root, leafCount)` costs when the estimate cannot be made (measured ~50k; rounded up). */
const ANCHOR_GAS_FALLBACK = 80_000n

export interface EvmCheckOptions {
  /** Batches the signer's balance should pay for at the current fee. */
  readonly batches: number
  /** Clock skew beyond which the clocks check warns (ms). */
  readonly maxSkewMillis: number
  readonly now: () => number
  /** Balance and clock (false for `anchord start`: warnings only). */
  readonly full: boolean
}

/** RPC reachable, chain id, contract code, anchorer role; with `full`: balance for N batches, clock skew. */
export const evmChecks = (network: EvmNetworkConfig, options: EvmCheckOptions) =>
  Effect.gen(function*() {
    const name = `evm:${network.networkId}`
    const client = createPublicClient({ transport: http(network.rpcUrl, { retryCount: 0, timeout: network.rpcTimeoutMs }) }) as PublicClient
    const call = <A>(f: () => Promise<A>) => Effect.tryPromise(f)
    const chainId = yield* call(() => client.getChainId()).pipe(Effect.mapError((e) => ({ unreachable: reason(e) })))
    if (chainId !== network.chainId) {
      return [
        fatal(name, `the RPC endpoint serves chain ${chainId}, not ${network.chainId} as configured`,
          `fix rpcUrl or chainId of ${network.networkId} in EVM_NETWORKS`)
      ]
    }
    const out: Array<CheckResult> = []
    const code = yield* call(() => client.getCode({ address: network.contractAddress }))
    if (code === undefined || code === "0x") {
      return [
        fatal(name, `no contract at ${network.contractAddress} on chain ${chainId}`,
          "deploy AnchorRegistry (docs/configuration-evm.md) and set contractAddress")
      ]
    }
    // AnchorRegistry has no immutables: its runtime code is the artifact's, byte for byte.
    if (code.toLowerCase() !== artifact.deployedBytecode.toLowerCase()) {
      return [
        fatal(name, `the code at ${network.contractAddress} is not this version's AnchorRegistry`,
          "set contractAddress to an AnchorRegistry deployed from src/evm/AnchorRegistry.artifact.json")
      ]
    }
    const signer = privateKeyToAccount(Redacted.value(network.privateKey)).address
    const hasRole = yield* call(() =>
      client.readContract({ address: network.contractAddress, abi: anchorRegistryAbi, functionName: "hasRole", args: [ANCHORER_ROLE, signer] }) as Promise<
        boolean
      >
    )
    if (!hasRole) {
      return [
        fatal(name, `the signer ${signer} does not hold ANCHORER_ROLE on ${network.contractAddress}`,
          "grant it: grantRole(ANCHORER_ROLE, signer) from the contract's admin (docs/configuration-evm.md)")
      ]
    }
    out.push(ok(name, `chain ${chainId}, AnchorRegistry at ${network.contractAddress}, signer ${signer} holds ANCHORER_ROLE`))
    if (!options.full) return out
    const [balance, gasPrice, gas] = yield* Effect.all([
      call(() => client.getBalance({ address: signer })),
      call(() => client.getGasPrice()),
      call(() =>
        client.estimateContractGas({
          address: network.contractAddress,
          abi: anchorRegistryAbi,
          functionName: "anchor",
          args: [keccak256(toHex(`anchord doctor ${options.now()}`)), 1],
          account: signer
        })
      ).pipe(Effect.orElseSucceed(() => ANCHOR_GAS_FALLBACK))
    ], { concurrency: "unbounded" })
    const perBatch = gas * gasPrice
    const need = perBatch * BigInt(options.batches)
    const eth = (wei: bigint) => `${(Number(wei) / 1e18).toPrecision(4)} ETH`
    if (balance < perBatch) {
      out.push(fatal(`${name}:balance`, `the signer holds ${eth(balance)}: not enough for one batch (${gas} gas at ${gasPrice} wei)`, `fund ${signer}`))
    } else if (balance < need) {
      out.push(
        warn(`${name}:balance`, `the signer's ${eth(balance)} pays for ${balance / perBatch} batches at the current fee, fewer than ${options.batches}`,
          `fund ${signer} (about ${eth(need)} for ${options.batches} batches)`)
      )
    } else {
      out.push(ok(`${name}:balance`, `${eth(balance)}: ${balance / perBatch} batches at the current fee (${gas} gas × ${gasPrice} wei)`))
    }
    const block = yield* call(() => client.getBlock({ blockTag: "latest" }))
    const skew = options.now() - Number(block.timestamp) * 1000
    out.push(Math.abs(skew) > options.maxSkewMillis
      ? warn(`${name}:clock`, `the latest block is ${Math.round(skew / 1000)} s ${skew > 0 ? "behind" : "ahead of"} this machine's clock`,
        "check NTP on this machine, or whether the chain still produces blocks")
      : ok(`${name}:clock`, `within ${Math.round(Math.abs(skew) / 1000)} s of the latest block`))
    return out
  }).pipe(
    Effect.catch((e: unknown) => {
      const unreachable = typeof e === "object" && e !== null && "unreachable" in e
      return Effect.succeed([
        warn(`evm:${network.networkId}`,
          `RPC ${unreachable ? "unreachable" : "call failed"}: ${unreachable ? (e as { unreachable: string }).unreachable : reason(e)}`,
          `check rpcUrl of ${network.networkId} (the node starts anyway and retries; records wait in QUEUED)`)
      ])
    })
  )

// ---- Fabric networks ----------------------------------------------------------------------------

/** Identity files (certificate, key, and that they pair), TLS root; then one evaluate call on the chaincode. */
export const fabricChecks = (network: FabricNetworkConfig, options: { readonly now: Date; readonly reach: boolean }) =>
  Effect.gen(function*() {
    const name = `fabric:${network.networkId}`
    let cert: Crypto.X509Certificate
    try {
      cert = new Crypto.X509Certificate(Fs.readFileSync(network.certPath))
    } catch (e) {
      return [fatal(name, `certPath ${network.certPath}: ${reason(e)}`, "point certPath at the client's PEM certificate")]
    }
    let key: Crypto.KeyObject
    try {
      key = Crypto.createPrivateKey(Fs.readFileSync(network.keyPath))
    } catch (e) {
      return [
        fatal(name, `keyPath ${network.keyPath}: not a readable private key (${(e as NodeJS.ErrnoException).code ?? "unparsable PEM"})`,
          "point keyPath at the client's PEM private key")
      ]
    }
    if (!cert.checkPrivateKey(key)) return [fatal(name, "keyPath is not the key of the certificate in certPath", "use the key the certificate was issued for")]
    if (new Date(cert.validTo).getTime() <= options.now.getTime()) {
      return [fatal(name, `the client certificate expired on ${new Date(cert.validTo).toISOString()}`, "enroll the identity again")]
    }
    if (network.tlsRootCertPath === undefined) {
      if (!/^(localhost|127\.|\[::1\])/.test(network.peerEndpoint)) {
        return [
          fatal(name, `no tlsRootCertPath: plaintext gRPC to ${network.peerEndpoint}`,
            "set tlsRootCertPath (the peer's TLS CA); plaintext is for the dev peer only")
        ]
      }
    } else {
      try {
        new Crypto.X509Certificate(Fs.readFileSync(network.tlsRootCertPath))
      } catch (e) {
        return [fatal(name, `tlsRootCertPath ${network.tlsRootCertPath}: ${reason(e)}`, "point tlsRootCertPath at the peer's TLS CA certificate (PEM)")]
      }
    }
    const identity = `identity ${network.mspId} valid until ${new Date(cert.validTo).toISOString()}`
    if (!options.reach) return [ok(name, identity)]
    const reached = yield* Effect.scoped(Effect.gen(function*() {
      const client = yield* makeFabricClient(network)
      return yield* client.lookup(`0x${"00".repeat(32)}`)
    })).pipe(Effect.as(undefined), Effect.catch((e) => Effect.succeed(reason(e))))
    return [reached === undefined
      ? ok(name, `${identity}; chaincode ${network.chaincode} on ${network.channel} answers`)
      : warn(name, `${identity}; chaincode ${network.chaincode} on ${network.channel} did not answer: ${reached}`,
        `check peerEndpoint ${network.peerEndpoint}, channel and chaincode (the node starts anyway and retries)`)]
  })
