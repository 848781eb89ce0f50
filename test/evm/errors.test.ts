// How the EVM writer's reasons are read from viem's errors: its typed errors found by walking the chain of
// causes, the contract's reverts decoded with the AnchorRegistry ABI (also from raw revert data), and the
// few node answers viem has no class for. The errors are built as viem builds them for a node's answer.
//   npx vitest run test/evm/errors.test.ts
import { ContractFunctionExecutionError, ContractFunctionRevertedError, encodeErrorResult, type Hex, InternalRpcError, InvalidInputRpcError,
  LimitExceededRpcError, RpcRequestError, TimeoutError, TransactionRejectedRpcError } from "viem"
import { describe, expect, it } from "vitest"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { classify, isAlreadyKnown } from "../../src/evm/errors.ts"

const URL = "https://user:pw@rpc.example/v3/SECRETKEY"
const ROOT = `0x${"12".repeat(32)}` as Hex
const SIGNED_TX = `0x${"ab".repeat(200)}`

/** A JSON-RPC error answer as viem's request layer wraps it (`InvalidInputRpcError` for -32000). */
const nodeSaid = (message: string, code = -32000, data?: Hex) => {
  const request = new RpcRequestError({ body: { method: "eth_sendRawTransaction", params: [SIGNED_TX] }, error: { code, message, data }, url: URL })
  return code === -32000
    ? new InvalidInputRpcError(request)
    : code === -32003
    ? new TransactionRejectedRpcError(request)
    : code === -32005
    ? new LimitExceededRpcError(request)
    : new InternalRpcError(request)
}

/** A revert of `anchor` as viem reports it after decoding the node's revert data. */
const reverted = (data: Hex | undefined, message?: string) =>
  new ContractFunctionExecutionError(
    new ContractFunctionRevertedError({ abi: anchorRegistryAbi, data, functionName: "anchor", message }),
    { abi: anchorRegistryAbi, functionName: "anchor", args: [ROOT, 2] }
  )

const rootAlreadyAnchored = encodeErrorResult({ abi: anchorRegistryAbi, errorName: "RootAlreadyAnchored", args: [ROOT, 7n] })
const unauthorized = encodeErrorResult({
  abi: anchorRegistryAbi,
  errorName: "AccessControlUnauthorizedAccount",
  args: [`0x${"cd".repeat(20)}`, `0x${"00".repeat(32)}`]
})

describe("classify (viem errors)", () => {
  it("decodes the contract's reverts with its ABI: decoded by viem, raw in an RPC error, or quoted in the node's message", () => {
    expect(classify(reverted(rootAlreadyAnchored))._tag).toBe("AlreadyAnchored")
    expect(classify(nodeSaid("VM Exception while processing transaction", -32603, rootAlreadyAnchored))._tag).toBe("AlreadyAnchored")
    expect(classify(nodeSaid(`execution reverted: ${rootAlreadyAnchored}`))._tag).toBe("AlreadyAnchored")
    const role = classify(reverted(unauthorized))
    expect(role._tag).toBe("Reverted")
    expect(role.message).toMatch(/^AccessControlUnauthorizedAccount \(signer lacks ANCHORER_ROLE\)/)
    expect(classify(reverted(undefined, "execution reverted: no reason"))._tag).toBe("Reverted")
  })

  it("types the node's answers with viem's node errors, and the few it has no class for by the node's words", () => {
    expect(classify(nodeSaid("nonce too low"))._tag).toBe("NonceTooLow")
    expect(classify(nodeSaid("nonce too low: next nonce 5, tx nonce 4", -32003))._tag).toBe("NonceTooLow")
    expect(classify(nodeSaid("insufficient funds for gas * price + value"))._tag).toBe("InsufficientFunds")
    expect(classify(nodeSaid("replacement transaction underpriced"))._tag).toBe("Underpriced")
    expect(classify(nodeSaid("max fee per gas less than block base fee: address 0x..., maxFeePerGas: 1, baseFee: 7"))._tag).toBe("Underpriced")
    expect(classify(nodeSaid("invalid sender"))._tag).toBe("Rejected")
  })

  it("an endpoint that does not answer is RpcUnavailable, a call that ran into its bound says so", () => {
    const timedOut = classify(new TimeoutError({ body: { method: "eth_call" }, url: URL }))
    expect(timedOut).toMatchObject({ _tag: "RpcUnavailable", timedOut: true })
    expect(classify(nodeSaid("daily request count exceeded", -32005))).toMatchObject({ _tag: "RpcUnavailable", timedOut: false })
    expect(classify(nodeSaid("your app has exceeded its compute units per second capacity (rate limit)"))._tag).toBe("RpcUnavailable")
  })

  it("messages never carry the signed transaction or the RPC URL's secrets", () => {
    for (const e of [nodeSaid("nonce too low"), new TimeoutError({ body: { params: [SIGNED_TX] }, url: URL })]) {
      const { message } = classify(e)
      expect(message).not.toMatch(/SECRET|user:pw|abababab/)
    }
  })

  it("a transaction the node holds already is told apart from a used nonce (viem counts both as NonceTooLowError)", () => {
    expect(isAlreadyKnown(nodeSaid("already known"))).toBe(true)
    expect(isAlreadyKnown(nodeSaid("nonce too low"))).toBe(false)
    expect(classify(new Error("not from viem"))._tag).toBe("Rejected")
  })
})
