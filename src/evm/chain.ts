/**
 * One network's JSON-RPC access (viem) as Effects failing with EvmError. Transient failures are
 * retried briefly here (`rpcRetry`); longer outages surface to the loops, which keep polling.
 */
import { Effect, Redacted, Schedule } from "effect"
import { BlockNotFoundError, createPublicClient, encodeFunctionData, type Hex, http, keccak256, type PublicClient, TransactionNotFoundError,
  TransactionReceiptNotFoundError } from "viem"
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts"
import { anchorRegistryAbi } from "./AnchorRegistry.abi.ts"
import type { EvmNetworkConfig } from "./config.ts"
import { classify, EvmError, isAlreadyKnown, RpcUnavailable } from "./errors.ts"

/**
 * Transient RPC errors: 4 quick retries (100 ms, 200 ms, 400 ms, 800 ms, jittered). Not a call that ran
 * into its bound: retrying a hung endpoint would multiply the wait (4 × 10 s hid an outage for ~52 s); the
 * loop reports it at once and tries again on its next tick.
 */
const isQuickFailure = (e: EvmError): boolean => e.reason instanceof RpcUnavailable && !e.reason.timedOut

export const rpcRetry = Schedule.max([Schedule.exponential("100 millis").pipe(Schedule.jittered), Schedule.recurs(4)])

export const anchoredEvent = anchorRegistryAbi.find((x) => x.type === "event" && x.name === "Anchored")! as Extract<
  (typeof anchorRegistryAbi)[number],
  { type: "event"; name: "Anchored" }
>

export interface AnchoredLog {
  readonly chainBatchId: bigint
  readonly root: Hex
  readonly leafCount: number
  readonly blockNumber: bigint
  readonly blockHash: Hex
  readonly txHash: Hex
}

export interface Eip1559Tx {
  readonly nonce: number
  readonly gas: bigint
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

/** The log checkpoint a batch's transaction carries (`anchorWithCheckpoint`, docs/design/transparency-log.md). */
export interface CheckpointArgs {
  readonly oldSize: number
  readonly newLogRoot: Hex
  readonly consistency: ReadonlyArray<Hex>
}

export interface Chain {
  readonly config: EvmNetworkConfig
  readonly client: PublicClient
  readonly address: Hex
  readonly call: <A>(operation: string, f: (client: PublicClient) => Promise<A>) => Effect.Effect<A, EvmError>
  readonly chainId: Effect.Effect<number, EvmError>
  readonly head: Effect.Effect<bigint, EvmError>
  readonly block: (n: bigint) => Effect.Effect<{ readonly hash: Hex; readonly timestamp: bigint } | undefined, EvmError>
  /** getAnchor(root): undefined when the root is not anchored in this contract. */
  readonly getAnchor: (root: Hex) => Effect.Effect<{ chainBatchId: bigint; blockNumber: bigint } | undefined, EvmError>
  readonly anchoredLogs: (from: bigint, to: bigint, root?: Hex) => Effect.Effect<ReadonlyArray<AnchoredLog>, EvmError>
  readonly nonces: Effect.Effect<{ readonly latest: number; readonly pending: number }, EvmError>
  readonly fees: Effect.Effect<{ readonly maxFeePerGas: bigint; readonly maxPriorityFeePerGas: bigint }, EvmError>
  readonly estimateAnchorGas: (root: Hex, leafCount: number, logRoot: Hex | null) => Effect.Effect<bigint, EvmError>
  /**
   * Signs `anchorWithLogRoot(root, leafCount, logRoot)` (or `anchor(root, leafCount)` for a batch without
   * an RFC 9162 root, `anchorWithCheckpoint` with a checkpoint) locally; returns the raw tx and its hash (nothing sent).
   */
  readonly signAnchor: (
    root: Hex,
    leafCount: number,
    logRoot: Hex | null,
    tx: Eip1559Tx,
    checkpoint?: CheckpointArgs
  ) => Effect.Effect<{ raw: Hex; hash: Hex }>
  /**
   * Whether the contract has `anchorWithLogRoot` (older deployments have not): asked once with an
   * `eth_call` of its pure `logLeafHash`, which an older contract reverts.
   */
  readonly supportsLogRoot: Effect.Effect<boolean, EvmError>
  /** Whether the contract has `anchorWithCheckpoint`: asked once with an `eth_call` of its `checkpoint()` view. */
  readonly supportsCheckpoint: Effect.Effect<boolean, EvmError>
  /** The log checkpoint the contract stores (size 0 before the first). */
  readonly checkpoint: Effect.Effect<{ readonly size: number; readonly root: Hex }, EvmError>
  readonly broadcast: (raw: Hex) => Effect.Effect<void, EvmError>
  readonly receipt: (hash: Hex) => Effect.Effect<{ status: "success" | "reverted"; gasUsed: bigint } | undefined, EvmError>
  readonly txKnown: (hash: Hex) => Effect.Effect<boolean, EvmError>
  readonly signer: Hex
}

export const makeChain = (config: EvmNetworkConfig): Chain => {
  const client = createPublicClient({ transport: http(config.rpcUrl, { retryCount: 0, timeout: config.rpcTimeoutMs }) }) as PublicClient
  // The key leaves its Redacted box only here, into viem's local account (never logged, never sent).
  const account: PrivateKeyAccount = privateKeyToAccount(Redacted.value(config.privateKey))
  const address = config.contractAddress

  const call = <A>(operation: string, f: (c: PublicClient) => Promise<A>): Effect.Effect<A, EvmError> =>
    Effect.tryPromise({
      try: () => f(client),
      catch: (e) => new EvmError({ networkId: config.networkId, operation, reason: classify(e) })
    }).pipe(Effect.retry({ schedule: rpcRetry, while: isQuickFailure }))

  const anchoredLogs = (from: bigint, to: bigint, root?: Hex) =>
    call("eth_getLogs", (c) =>
      c.getLogs({ address, event: anchoredEvent, args: root === undefined ? undefined : { root }, fromBlock: from, toBlock: to, strict: true })).pipe(
        Effect.map((logs) =>
          logs.filter((l) => !l.removed && l.blockHash !== null && l.transactionHash !== null).map((l): AnchoredLog => ({
            chainBatchId: l.args.batchId,
            root: l.args.root.toLowerCase() as Hex,
            leafCount: l.args.leafCount,
            blockNumber: l.blockNumber!,
            blockHash: l.blockHash!,
            txHash: l.transactionHash!
          }))
        )
      )

  /** Whether an `eth_call` of `probe` succeeds, asked once: a revert (or no data back) is "no"; an unreachable endpoint stays an error. */
  const supports = (operation: string, probe: () => Promise<unknown>): Effect.Effect<boolean, EvmError> => {
    let known: boolean | undefined
    return Effect.suspend(() =>
      known !== undefined
        ? Effect.succeed(known)
        : Effect.tryPromise({ try: probe, catch: (e) => new EvmError({ networkId: config.networkId, operation, reason: classify(e) }) }).pipe(
          Effect.as(true),
          Effect.catchReasons("EvmError", { RpcUnavailable: (_, e) => Effect.fail(e) }, () => Effect.succeed(false)),
          Effect.tap((ok) =>
            Effect.sync(() => {
              known = ok
            })
          )
        )
    )
  }
  const supportsLogRoot = supports("logLeafHash",
    () => client.readContract({ address, abi: anchorRegistryAbi, functionName: "logLeafHash", args: [`0x${"00".repeat(32)}`] }))
  const supportsCheckpoint = supports("checkpoint", () => client.readContract({ address, abi: anchorRegistryAbi, functionName: "checkpoint" }))

  return {
    config,
    client,
    address,
    call,
    signer: account.address,
    chainId: call("eth_chainId", (c) => c.getChainId()),
    head: call("eth_blockNumber", (c) => c.getBlockNumber({ cacheTime: 0 })),
    block: (n) =>
      call("eth_getBlockByNumber", async (c) => {
        try {
          const b = await c.getBlock({ blockNumber: n })
          return { hash: b.hash!, timestamp: b.timestamp }
        } catch (e) {
          if (e instanceof BlockNotFoundError) return undefined
          throw e
        }
      }),
    getAnchor: (root) =>
      call("getAnchor", (c) => c.readContract({ address, abi: anchorRegistryAbi, functionName: "getAnchor", args: [root] })).pipe(
        Effect.map(([chainBatchId, blockNumber]) => chainBatchId === 0n ? undefined : { chainBatchId, blockNumber })
      ),
    anchoredLogs,
    nonces: Effect.all({
      latest: call("eth_getTransactionCount", (c) => c.getTransactionCount({ address: account.address, blockTag: "latest" })),
      pending: call("eth_getTransactionCount", (c) => c.getTransactionCount({ address: account.address, blockTag: "pending" }))
    }),
    fees: call("fees", async (c) => {
      const f = await c.estimateFeesPerGas()
      return { maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas }
    }),
    estimateAnchorGas: (root, leafCount, logRoot) =>
      call("eth_estimateGas", (c) =>
        logRoot === null
          ? c.estimateContractGas({ address, abi: anchorRegistryAbi, functionName: "anchor", args: [root, leafCount], account: account.address })
          : c.estimateContractGas({
            address,
            abi: anchorRegistryAbi,
            functionName: "anchorWithLogRoot",
            args: [root, leafCount, logRoot],
            account: account.address
          })),
    supportsLogRoot,
    supportsCheckpoint,
    checkpoint: call("checkpoint", (c) => c.readContract({ address, abi: anchorRegistryAbi, functionName: "checkpoint" })).pipe(
      Effect.map(([size, root]) => ({ size: Number(size), root }))
    ),
    signAnchor: (root, leafCount, logRoot, tx, checkpoint) =>
      Effect.promise(async () => {
        const raw = await account.signTransaction({
          type: "eip1559",
          chainId: config.chainId,
          to: address,
          data: logRoot === null
            ? encodeFunctionData({ abi: anchorRegistryAbi, functionName: "anchor", args: [root, leafCount] })
            : checkpoint !== undefined
            ? encodeFunctionData({
              abi: anchorRegistryAbi,
              functionName: "anchorWithCheckpoint",
              args: [root, leafCount, logRoot, BigInt(checkpoint.oldSize), checkpoint.newLogRoot, checkpoint.consistency]
            })
            : encodeFunctionData({ abi: anchorRegistryAbi, functionName: "anchorWithLogRoot", args: [root, leafCount, logRoot] }),
          nonce: tx.nonce,
          gas: tx.gas,
          maxFeePerGas: tx.maxFeePerGas,
          maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
          value: 0n
        })
        return { raw, hash: keccak256(raw) }
      }),
    broadcast: (raw) =>
      Effect.tryPromise({
        try: () => client.sendRawTransaction({ serializedTransaction: raw }),
        catch: (e) => e
      }).pipe(
        Effect.asVoid,
        Effect.catch((e) =>
          // Re-broadcasting a transaction the node already holds is a success.
          isAlreadyKnown(e)
            ? Effect.void
            : Effect.fail(new EvmError({ networkId: config.networkId, operation: "eth_sendRawTransaction", reason: classify(e) }))
        ),
        Effect.retry({ schedule: rpcRetry, while: isQuickFailure })
      ),
    receipt: (hash) =>
      call("eth_getTransactionReceipt", async (c) => {
        try {
          const r = await c.getTransactionReceipt({ hash })
          return { status: r.status, gasUsed: r.gasUsed }
        } catch (e) {
          if (e instanceof TransactionReceiptNotFoundError) return undefined
          throw e
        }
      }),
    txKnown: (hash) =>
      call("eth_getTransactionByHash", async (c) => {
        try {
          await c.getTransaction({ hash })
          return true
        } catch (e) {
          if (e instanceof TransactionNotFoundError) return false
          throw e
        }
      })
  }
}
