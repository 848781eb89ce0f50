/**
 * The wire types of `anchord/client`, declared by hand so the SDK's .d.ts needs no Effect types.
 * `test/sdk/types.test.ts` checks that each equals the encoded side of the server's schema
 * (src/api/recordSchemas.ts, src/api/proofBundle.ts): a schema change that is not made here fails
 * `tsc --noEmit -p .`.
 */

export type ChainType = "evm" | "fabric" | "hybrid"
export type PackageMode = "SEPARATED" | "IN_PLACE" | "MANAGED"
export type RecordStatus = "QUEUED" | "BATCHING" | "ANCHORED" | "FAILED" | "DELETED"
export type JsonObject = { readonly [key: string]: unknown }

/** One anchor of a record (SPEC 4). */
export interface Anchor {
  readonly chainType: "evm" | "fabric"
  readonly networkId: string
  /** EVM: the contract's batch counter; Fabric: a string. */
  readonly batchId: number | string
  /** EVM: 0x + 64 hex; Fabric: the raw transaction id. */
  readonly txHash: string
  readonly blockNumber: number | null
  readonly merkleRoot: string
  readonly merkleProof: ReadonlyArray<string>
  readonly anchoredAt: string | null
  readonly contractAddress?: string
  readonly chainId?: number
  readonly channel?: string
  readonly chaincode?: string
}

/** AES-256-GCM fields of an encrypted record looked up without its key (base64). */
export interface EncryptedPayload {
  readonly algorithm: "AES-256-GCM"
  readonly ciphertext: string
  readonly nonce: string
  readonly tag: string
}

/** The record representation (SPEC 4), as `GET /v1/records/{id}` answers it. */
export interface AnchordRecord {
  readonly recordId: string
  readonly hash: string
  readonly status: RecordStatus
  readonly environment: "test" | "live"
  readonly chainType: ChainType
  readonly networkId: string
  readonly packageMode: PackageMode
  /** The grouping name given at submission, or null. */
  readonly collection: string | null
  readonly metadata: JsonObject
  readonly webhookUrl: string | null
  readonly createdAt: string
  readonly updatedAt: string
  readonly anchoredAt: string | null
  readonly deletedAt: string | null
  readonly data: unknown
  readonly encrypted: boolean
  readonly encryptedData?: EncryptedPayload
  /**
   * Encrypted records: how `hash` commits to the plaintext. `salted-jcs-sha256`: hash =
   * sha256(JCS({"data": data, "salt": salt})) (docs/verifying.md); `jcs-sha256`: hash = sha256(JCS(data)).
   */
  readonly hashScheme?: HashScheme
  /** A salted record's salt: in the answer of its creation and of `get(id, { encryptionKey })` only. */
  readonly salt?: string
  readonly anchors: ReadonlyArray<Anchor>
}

export type HashScheme = "salted-jcs-sha256" | "jcs-sha256"

/** One record of `POST /v1/anchor/batch` (the body of `POST /v1/anchor`). */
export interface AnchorRequest {
  readonly data: JsonObject
  readonly webhookUrl?: string
  readonly chain?: ChainType
  readonly packageMode?: PackageMode
  readonly metadata?: JsonObject
  /** A grouping name (1 to 128 characters, no control characters): not hashed, immutable, filterable in `list`. */
  readonly collection?: string
}

export type BatchItemResult =
  | { readonly index: number; readonly success: true; readonly data: AnchordRecord }
  | { readonly index: number; readonly success: false; readonly error: string; readonly errorCode: string }

/** `POST /v1/anchor/batch`: HTTP 202 when every item was accepted, 207 when some (or all) were refused. */
export interface BatchResult {
  readonly accepted: number
  readonly rejected: number
  /** The same counts under the seed service's names. */
  readonly summary: { readonly successful: number; readonly failed: number }
  readonly results: ReadonlyArray<BatchItemResult>
}

/** One page of `GET /v1/records`. */
export interface RecordPage {
  readonly records: ReadonlyArray<AnchordRecord>
  readonly nextCursor: string | null
}

export interface DeleteResult {
  readonly recordId: string
  readonly mode: "soft" | "hard"
  readonly deletedAt: string
}

/** What `PATCH /v1/records/{id}` may change. */
export interface RecordPatch {
  readonly metadata?: JsonObject
  readonly webhookUrl?: string | null
}

export interface ProofBundleAnchor {
  readonly chainType: "evm" | "fabric"
  readonly networkId: string
  readonly chainId?: number | null
  readonly contractAddress?: string | null
  readonly channel?: string
  readonly chaincode?: string
  readonly mspId?: string
  readonly batchId: number | string
  readonly merkleRoot: string
  readonly merkleProof: ReadonlyArray<string>
  readonly leafIndex: number
  readonly leafCount: number
  readonly txHash: string
  readonly blockNumber: number | null
  readonly blockHash: string | null
  readonly anchoredAt: string | null
}

/** The proof bundle, version 1 (docs/proof-format.md). */
export interface ProofBundle {
  readonly version: 1
  readonly recordId: string
  readonly hash: string
  readonly hashAlgorithm: "sha256"
  readonly canonicalization: "RFC8785-JCS"
  /** A salted encrypted record: hash = sha256(JCS({"data": data, "salt": salt})). */
  readonly hashScheme?: "salted-jcs-sha256"
  /** Only in the `_anchor` of a decrypted IN_PLACE lookup. */
  readonly salt?: string
  readonly leafEncoding: "openzeppelin-standard-merkle-tree:bytes32"
  readonly anchors: ReadonlyArray<ProofBundleAnchor>
}
