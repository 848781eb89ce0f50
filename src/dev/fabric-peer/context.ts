/** What the gRPC services share: the ledger, the chaincode and the peer's identity. */
import type { BlockSigner } from "./blocks.ts"
import type { Detail } from "./errors.ts"
import type { Ledger } from "./ledger.ts"
import type { ContractRouter } from "./stub.ts"

export interface PeerContext {
  readonly ledger: Ledger
  readonly router: ContractRouter
  readonly channel: string
  readonly chaincode: string
  readonly mspId: string
  /** Reported as `ErrorDetail.address` (the endpoint that failed). */
  readonly address: () => string
  readonly signer: BlockSigner
  readonly log: (message: string) => void
}

/** An ErrorDetail naming this peer. */
export const detail = (ctx: PeerContext, message: string): Detail => ({ address: ctx.address(), mspId: ctx.mspId, message })
