/**
 * The real `@hyperledger/fabric-gateway` client over gRPC (@grpc/grpc-js), for a real network and
 * the dev peer alike. Every unary call carries a deadline; results are Effects failing with
 * FabricError. The private key is read from its file here and kept only inside the signer.
 */
import * as grpc from "@grpc/grpc-js"
import { type Contract, connect, type Gateway, hash, type Network, signers, type Status, type Transaction } from "@hyperledger/fabric-gateway"
import { type common, gateway as gatewayPb, msp } from "@hyperledger/fabric-protos"
import * as Fs from "node:fs"
import { createPrivateKey } from "node:crypto"
import { Clock, Effect, Scope } from "effect"
import type { FabricNetworkConfig } from "./config.ts"
import { classify, FabricError, Rejected } from "./errors.ts"

/** What the chaincode stores and returns for a root (contracts/fabric). */
export interface AnchorRecord {
  readonly root: string
  readonly leafCount: number
  readonly batchId: string
  readonly txId: string
  readonly timestamp: string
  /** The batch's RFC 9162 root, when anchored with `anchorWithLogRoot`. */
  readonly logRoot?: string
}

export interface FabricClient {
  readonly network: Network
  readonly contract: Contract
  /**
   * Endorses `anchorWithLogRoot(root, leafCount, batchId, logRoot)`, or `anchor(root, leafCount, batchId)` for a
   * batch without an RFC 9162 root: the signed, endorsed transaction (not yet submitted).
   */
  readonly endorseAnchor: (root: string, leafCount: number, batchId: string, logRoot: string | null) => Effect.Effect<Transaction, FabricError>
  /** A transaction stored earlier (its bytes), to submit again. */
  readonly storedTransaction: (bytes: Uint8Array) => Transaction
  /** Submit + commit status (blocks until committed or the deadline). */
  readonly submit: (tx: Transaction) => Effect.Effect<Status, FabricError>
  /** `lookup(root)`: the anchor record, or undefined when the root is not anchored. */
  readonly lookup: (root: string) => Effect.Effect<AnchorRecord | undefined, FabricError>
  /** Commit status of any transaction id of the channel (blocks until committed or the deadline). */
  readonly commitStatus: (txId: string) => Effect.Effect<Status, FabricError>
  /** One block, read with a short-lived block event stream. */
  readonly block: (number: bigint) => Effect.Effect<common.Block, FabricError>
}

/** Connects (lazily: gRPC dials on first use); closed with the scope. */
export const makeFabricClient = (config: FabricNetworkConfig): Effect.Effect<FabricClient, FabricError, Scope.Scope> =>
  Effect.gen(function*() {
    // gRPC deadlines are instants; grpc-js holds them against the wall clock, which the live Clock reads.
    const clock = yield* Clock.Clock
    const deadline = (ms: number) => ({ deadline: clock.currentTimeMillisUnsafe() + ms })
    const fail = (operation: string) => (e: unknown) => new FabricError({ networkId: config.networkId, operation, reason: classify(e) })
    const files = yield* Effect.try({
      try: () => ({
        cert: Fs.readFileSync(config.certPath),
        key: createPrivateKey(Fs.readFileSync(config.keyPath)),
        tlsRoot: config.tlsRootCertPath === undefined ? undefined : Fs.readFileSync(config.tlsRootCertPath)
      }),
      // Names the file, never its contents.
      catch: (e) =>
        new FabricError({
          networkId: config.networkId,
          operation: "credentials",
          reason: new Rejected({ message: `cannot read the certificate, key or TLS root file: ${(e as Error).message.split("\n")[0]}` })
        })
    })
    const options: grpc.ClientOptions = {
      "grpc.keepalive_time_ms": 30_000,
      "grpc.keepalive_timeout_ms": 10_000,
      "grpc.keepalive_permit_without_calls": 1,
      ...(config.hostAlias === undefined ? {} : { "grpc.ssl_target_name_override": config.hostAlias })
    }
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new grpc.Client(
          config.peerEndpoint,
          files.tlsRoot === undefined ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(files.tlsRoot),
          options
        )
      ),
      (c) => Effect.sync(() => c.close())
    )
    const gw: Gateway = yield* Effect.acquireRelease(
      Effect.sync(() =>
        connect({
          client,
          identity: { mspId: config.mspId, credentials: files.cert },
          signer: signers.newPrivateKeySigner(files.key),
          hash: hash.sha256,
          evaluateOptions: () => deadline(config.evaluateTimeoutMs),
          endorseOptions: () => deadline(config.endorseTimeoutMs),
          submitOptions: () => deadline(config.submitTimeoutMs),
          commitStatusOptions: () => deadline(config.commitStatusTimeoutMs)
        })
      ),
      (g) => Effect.sync(() => g.close())
    )
    const network = gw.getNetwork(config.channel)
    const contract = network.getContract(config.chaincode)
    const identity = new msp.SerializedIdentity()
    identity.setMspid(config.mspId)
    identity.setIdBytes(files.cert)
    const identityBytes = identity.serializeBinary()

    const endorseAnchor = (root: string, leafCount: number, batchId: string, logRoot: string | null) =>
      Effect.tryPromise({
        try: () =>
          (logRoot === null
            ? contract.newProposal("anchor", { arguments: [root, String(leafCount), batchId] })
            : contract.newProposal("anchorWithLogRoot", { arguments: [root, String(leafCount), batchId, logRoot] }))
            .endorse(deadline(config.endorseTimeoutMs)),
        catch: fail("endorse")
      })

    const submit = (tx: Transaction) =>
      Effect.tryPromise({
        try: async () => {
          const submitted = await tx.submit(deadline(config.submitTimeoutMs))
          return submitted.getStatus(deadline(config.commitStatusTimeoutMs))
        },
        catch: fail("submit")
      })

    const lookup = (root: string) =>
      Effect.tryPromise({
        try: () => contract.newProposal("lookup", { arguments: [root] }).evaluate(deadline(config.evaluateTimeoutMs)),
        catch: fail("lookup")
      }).pipe(
        Effect.map((bytes) => JSON.parse(Buffer.from(bytes).toString("utf8")) as AnchorRecord),
        Effect.catchIf((e) => e.reason.message.includes("is not anchored"), () => Effect.succeed(undefined))
      )

    const commitStatus = (txId: string) =>
      Effect.tryPromise({
        try: () => {
          const request = new gatewayPb.CommitStatusRequest()
          request.setTransactionId(txId)
          request.setChannelId(config.channel)
          request.setIdentity(identityBytes)
          const signed = new gatewayPb.SignedCommitStatusRequest()
          signed.setRequest(request.serializeBinary())
          return gw.newCommit(signed.serializeBinary()).getStatus(deadline(config.commitStatusTimeoutMs))
        },
        catch: fail("commitStatus")
      })

    const block = (number: bigint) =>
      Effect.tryPromise({
        try: async (signal) => {
          const events = await network.getBlockEvents({ startBlock: number })
          const close = () => events.close()
          signal.addEventListener("abort", close)
          const timer = setTimeout(close, config.evaluateTimeoutMs)
          try {
            for await (const b of events) return b
            throw new Error(`block ${number}: stream ended`)
          } finally {
            clearTimeout(timer)
            signal.removeEventListener("abort", close)
            events.close()
          }
        },
        catch: fail("block")
      })

    return {
      network,
      contract,
      endorseAnchor,
      storedTransaction: (bytes) => gw.newTransaction(bytes),
      submit,
      lookup,
      commitStatus,
      block
    } satisfies FabricClient
  })
