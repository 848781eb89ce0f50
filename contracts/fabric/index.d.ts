// Types for the dev peer (TypeScript) importing this CommonJS chaincode.
import type { Context, Contract } from "fabric-contract-api"

export declare class AnchorContract extends Contract {
  constructor()
  anchor(ctx: Context, root: string, leafCount: string, batchId: string): Promise<string>
  anchorWithLogRoot(ctx: Context, root: string, leafCount: string, batchId: string, logRoot: string): Promise<string>
  anchorWithCheckpoint(ctx: Context, root: string, leafCount: string, batchId: string, logRoot: string, oldSize: string, newLogRoot: string,
    consistencyJson: string): Promise<string>
  getCheckpoint(ctx: Context): Promise<string>
  lookup(ctx: Context, root: string): Promise<string>
}
export declare const EVENT_NAME: "Anchored"
export declare const contracts: Array<typeof AnchorContract>
