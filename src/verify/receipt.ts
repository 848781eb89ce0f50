/**
 * `anchord verify --receipt r.cose --receipt-key key.pem --data d.json --rpc URL`: a COSE Receipt (RFC 9942,
 * docs/proof-format.md "COSE Receipts") checked without trusting the node: its shape, the record hash's
 * RFC 9162 inclusion proof, the ES256 signature over the root it gives (with the key the auditor holds),
 * and, for an EVM anchor, that root on chain: the anchoring transaction's LogRootAnchored log from the
 * contract, in a block still on the chain, deep enough, and the contract's own verifyLogInclusion.
 */
// Sub-module imports (not the "effect" barrel): `anchord verify` must start fast.
import * as Effect from "effect/Effect"
import { hashBytes, toHex } from "../anchoring/rfc9162.ts"
import { importReceiptKey, parseReceipt, type ParsedReceipt, receiptRoot, signatureValid } from "../receipts/receipt.ts"
import { hexNumber, type RpcClient, uint, word } from "./evm.ts"
import { checkFabricAnchor, type FabricOptions } from "./fabric.ts"
import { type Check, type Report, reportOfChecks } from "./report.ts"

/** keccak256("LogRootAnchored(uint64,bytes32)") (checked against viem in test/receipts). */
export const LOG_ROOT_TOPIC = "0xa2eb57a04786f39f13afed401bc6596b440565c0e2db5a7d9e0f2c34893dc481"
/** `verifyLogInclusion(bytes32,uint256,uint256,bytes32[],bytes32)` */
export const VERIFY_LOG_INCLUSION_SELECTOR = "0x6e80f441"

export const encodeVerifyLogInclusion = (hash: string, index: number, size: number, path: ReadonlyArray<string>, root: string) =>
  VERIFY_LOG_INCLUSION_SELECTOR + word(hash) + uint(index) + uint(size) + uint(0xa0) + word(root) + uint(path.length) +
  path.map(word).join("")

export interface ReceiptVerifyOptions {
  readonly receipt: Uint8Array
  /** The receipt key's SPKI DER (from the node's /.well-known, kept by the auditor). */
  readonly keySpki: Uint8Array
  /** The record hash, 64 hex: recomputed from the data (`hashSource` "data") or as given. */
  readonly hash: string
  readonly hashSource: "data" | "bundle"
  readonly rpc: RpcClient | undefined
  readonly minConfirmations: number
  readonly offline: boolean
  /** A Fabric receipt: the auditor's gateway identity (as for bundles). */
  readonly fabric?: FabricOptions | undefined
}

export const verifyReceipt = Effect.fn("verify.receipt")(function*(o: ReceiptVerifyOptions) {
  const checks: Array<Check> = []
  const add = (id: string, status: Check["status"], message: string, networkId?: string) =>
    checks.push({ id, status, message, ...(networkId === undefined ? {} : { networkId }) })
  const done = (r: ParsedReceipt | undefined): Report =>
    reportOfChecks("cose-receipt", o, checks, r?.anchor === undefined ? undefined : { chainType: r.anchor.chainType, networkId: r.anchor.networkId })

  let r: ParsedReceipt
  try {
    r = parseReceipt(o.receipt)
    add("receipt.format", "pass", `COSE_Sign1, ES256, vds RFC9162_SHA256; leaf ${r.inclusion.leafIndex} of ${r.inclusion.treeSize}`)
  } catch (e) {
    add("receipt.format", "fail", `not an RFC 9942 receipt this verifier reads: ${e instanceof Error ? e.message : String(e)}`)
    return done(undefined)
  }
  if (!/^[0-9a-f]{64}$/.test(o.hash)) {
    add("receipt.inclusion", "fail", "the record hash is not 64 hex characters")
    return done(r)
  }
  const root = receiptRoot(r, hashBytes(o.hash))
  if (root === undefined) {
    add("receipt.inclusion", "fail",
      `the inclusion path (${r.inclusion.path.length} hashes) does not fit leaf ${r.inclusion.leafIndex} of a tree of ${r.inclusion.treeSize}`)
    return done(r)
  }
  const rootHex = `0x${toHex(root)}`
  const stated = r.anchor?.logRoot?.toLowerCase()
  if (stated !== undefined && stated !== rootHex) {
    add("receipt.inclusion", "fail", `the proof gives root ${rootHex}, the receipt's anchor names ${stated}: the record hash is not this leaf`)
  } else {
    add("receipt.inclusion", "pass", `the record hash's RFC 9162 proof gives root ${rootHex}`)
  }
  const key = yield* Effect.tryPromise(() => importReceiptKey(o.keySpki)).pipe(Effect.result)
  if (key._tag === "Failure") {
    add("receipt.signature", "error", "the receipt key is not an ECDSA P-256 public key")
  } else {
    const valid = yield* Effect.promise(() => signatureValid(r, root, key.success))
    add("receipt.signature", valid ? "pass" : "fail", valid
      ? "ES256 signature over the root, by the given receipt key"
      : "the signature does not cover this root under the given key (another key, or the receipt or the hash was changed)")
  }

  const a = r.anchor
  if (a === undefined) {
    add("anchor", "fail", "the receipt names no anchor (its \"anchord-anchor\" header parameter): the root cannot be checked on a chain")
    return done(r)
  }
  const net = a.networkId
  if (o.offline) {
    add(`${a.chainType}.chain`, "skip", "--offline: no chain asked", net)
    return done(r)
  }
  if (a.chainType !== "evm") {
    // The ledger's record of the batch (lookup(merkleRoot)) must hold this root; its block as for bundles.
    const anchorLike = {
      chainType: "fabric" as const,
      networkId: net,
      channel: a.channel,
      chaincode: a.chaincode,
      batchId: a.batchId,
      merkleRoot: a.merkleRoot,
      merkleProof: [],
      leafCount: r.inclusion.treeSize,
      txHash: a.txHash,
      blockNumber: a.blockNumber,
      blockHash: a.blockHash,
      anchoredAt: a.anchoredAt
    }
    checks.push(...yield* checkFabricAnchor(anchorLike, o.fabric ?? {}, rootHex))
    return done(r)
  }
  const rpc = o.rpc
  if (rpc === undefined) {
    add("evm.rpc", "error", "no --rpc given for the receipt's chain", net)
    return done(r)
  }
  const contract = String(a.contractAddress ?? "").toLowerCase()
  const txHash = a.txHash.toLowerCase()
  const attempt = <A, E>(e: Effect.Effect<A, E>) => Effect.result(e)
  const path = r.inclusion.path.map((p) => `0x${toHex(p)}`)
  const [chainId, receipt, block, head, included] = yield* Effect.all([
    attempt(rpc.call("eth_chainId", [])),
    attempt(rpc.call("eth_getTransactionReceipt", [txHash])),
    attempt(rpc.call("eth_getBlockByNumber", [`0x${a.blockNumber.toString(16)}`, false])),
    attempt(rpc.call("eth_blockNumber", [])),
    attempt(
      rpc.call("eth_call", [{ to: contract, data: encodeVerifyLogInclusion(o.hash, r.inclusion.leafIndex, r.inclusion.treeSize, path, rootHex) }, "latest"])
    )
  ], { concurrency: "unbounded" })
  const unreachable = (x: { _tag: string; failure?: { message: string } }, id: string) => {
    if (x._tag === "Failure") {
      add(id, "error", x.failure!.message, net)
      return true
    }
    return false
  }
  if (!unreachable(chainId, "evm.chain-id")) {
    const id = hexNumber(chainId._tag === "Success" ? chainId.success : undefined)
    add("evm.chain-id", id === a.chainId ? "pass" : "fail", id === a.chainId ? `chain ${id}` : `the RPC serves chain ${id}, the receipt names ${a.chainId}`,
      net)
  }
  if (!unreachable(receipt, "evm.log-root")) {
    const tx = receipt._tag === "Success"
      ? receipt.success as { status?: string; blockNumber?: string; blockHash?: string;
        logs?: Array<{ address: string; topics: Array<string>; removed?: boolean }> } | null
      : null
    if (tx === null) add("evm.log-root", "fail", `transaction ${txHash} is not on this chain`, net)
    else {
      const logged = (tx.logs ?? []).some((l) =>
        !l.removed && l.address.toLowerCase() === contract && l.topics[0]?.toLowerCase() === LOG_ROOT_TOPIC && l.topics[2]?.toLowerCase() === rootHex
      )
      const inBlock = hexNumber(tx.blockNumber) === a.blockNumber
      add("evm.log-root", logged && inBlock && tx.status === "0x1" ? "pass" : "fail", logged && inBlock && tx.status === "0x1"
        ? `transaction ${txHash} (block ${a.blockNumber}) logged LogRootAnchored(…, ${rootHex}) from ${contract}`
        : !logged
        ? `transaction ${txHash} logged no LogRootAnchored with root ${rootHex} from ${contract}`
        : `transaction ${txHash} is in block ${hexNumber(tx.blockNumber)}, not ${a.blockNumber}, or did not succeed`, net)
    }
  }
  if (!unreachable(block, "evm.block")) {
    const b = block._tag === "Success" ? block.success as { hash?: string } | null : null
    const ok = b !== null && (a.blockHash === null || b.hash?.toLowerCase() === a.blockHash.toLowerCase())
    add("evm.block", ok ? "pass" : "fail", ok
      ? `block ${a.blockNumber} is on the chain${a.blockHash === null ? "" : ` with hash ${a.blockHash}`}`
      : `block ${a.blockNumber} is not the receipt's (reorganised?)`, net)
  }
  if (!unreachable(head, "evm.confirmations")) {
    const h = hexNumber(head._tag === "Success" ? head.success : undefined) ?? 0
    const depth = h - a.blockNumber + 1
    add("evm.confirmations", depth >= o.minConfirmations ? "pass" : "fail", `${depth} confirmation(s), ${o.minConfirmations} required`, net)
  }
  if (!unreachable(included, "evm.contract-log-inclusion")) {
    const ok = included._tag === "Success" && hexNumber(included.success) === 1
    add("evm.contract-log-inclusion", ok ? "pass" : "fail",
      ok ? "verifyLogInclusion(hash, index, size, path, root) is true on the contract" : "the contract's verifyLogInclusion says false", net)
  }
  return done(r)
})
