/** The chain a receipt names (its anchor claims), from the stored anchor and batch. */
import type { ReceiptAnchor } from "./receipt.ts"
import type { ReceiptRow } from "./ReceiptStore.ts"

/** EVM: the contract's numeric batch id and chain id; Fabric: the chaincode's batch reference, channel and chaincode. */
export const receiptAnchor = (a: ReceiptRow): ReceiptAnchor => ({
  chainType: a.chainType,
  networkId: a.networkId,
  ...(a.chainType === "evm"
    ? { chainId: a.chainId === null ? undefined : Number(a.chainId), contractAddress: a.contractAddress ?? undefined }
    : { channel: a.channel ?? undefined, chaincode: a.chaincode ?? undefined }),
  batchId: a.chainType === "evm" ? Number(a.chainBatchId ?? 0) : (a.chainBatchRef ?? a.chainBatchId ?? ""),
  merkleRoot: a.merkleRoot,
  logRoot: a.logRoot,
  txHash: a.txHash,
  blockNumber: Number(a.blockNumber),
  blockHash: a.blockHash,
  anchoredAt: a.anchoredAt === null ? null : a.anchoredAt.toISOString()
})
