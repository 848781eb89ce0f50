/**
 * `verifyBundle`: the offline half of checking a proof bundle (docs/proof-format.md, "Verifying"):
 * the hash recomputed from the data (RFC 8785 JCS + SHA-256) when the data is given, and each
 * anchor's Merkle proof folded to its root with OpenZeppelin's own StandardMerkleTree (leaf encoding
 * `["bytes32"]`: double-keccak leaves, sorted pairs). It does not ask any chain whether the root is
 * anchored: that is `npx anchord verify bundle.json --rpc <url>` (docs/verifying.md).
 */
import { createHash } from "node:crypto"
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { canonicalize } from "../canonical/jcs.ts"

export interface BundleAnchorCheck {
  readonly chainType: string
  readonly networkId: string
  readonly merkleRoot: string
  /** The proof folds the record's leaf to `merkleRoot`. */
  readonly valid: boolean
}

export interface VerifyBundleResult {
  /** Every check passed: the hash (from the data when given) is included under every anchor's root. */
  readonly valid: boolean
  /** The record hash the proofs were checked for: recomputed from `data` when given, else the bundle's. */
  readonly hash: string | null
  readonly hashSource: "data" | "bundle"
  readonly anchors: ReadonlyArray<BundleAnchorCheck>
  /** What failed, in words (empty when valid). */
  readonly problems: ReadonlyArray<string>
}

const HASH = /^[0-9a-f]{64}$/
const BYTES32 = /^0x[0-9a-fA-F]{64}$/

const included = (hash: string, proof: unknown, root: unknown): boolean => {
  if (typeof root !== "string" || !BYTES32.test(root)) return false
  if (!Array.isArray(proof) || !proof.every((p) => typeof p === "string" && BYTES32.test(p))) return false
  try {
    return StandardMerkleTree.verify(root as `0x${string}`, ["bytes32"], [`0x${hash}`], proof as Array<`0x${string}`>)
  } catch {
    return false
  }
}

/**
 * Checks a proof bundle (as `client.proof(id)` returns it, or read from a file) offline.
 * @param options.data the record's data: when given, its hash is recomputed and must be the bundle's.
 * @param options.salt a salted encrypted record's salt (its lookup with the encryption key gives it): the hash
 *   is then recomputed over {"data": data, "salt": salt}.
 */
export const verifyBundle = (bundle: unknown, options: { readonly data?: unknown; readonly salt?: string } = {}): VerifyBundleResult => {
  const problems: Array<string> = []
  const b = (typeof bundle === "object" && bundle !== null ? bundle : {}) as Record<string, unknown>
  if (b.version !== 1) problems.push(`unknown bundle version ${JSON.stringify(b.version)} (this SDK reads version 1)`)
  if (b.hashAlgorithm !== "sha256") problems.push(`hashAlgorithm is ${JSON.stringify(b.hashAlgorithm)}, expected "sha256"`)
  if (b.canonicalization !== "RFC8785-JCS") problems.push(`canonicalization is ${JSON.stringify(b.canonicalization)}, expected "RFC8785-JCS"`)
  if (b.leafEncoding !== "openzeppelin-standard-merkle-tree:bytes32") {
    problems.push(`leafEncoding is ${JSON.stringify(b.leafEncoding)}, expected "openzeppelin-standard-merkle-tree:bytes32"`)
  }
  const stated = typeof b.hash === "string" && HASH.test(b.hash) ? b.hash : null
  if (stated === null) problems.push(`the bundle's hash ${JSON.stringify(b.hash)} is not 64 lowercase hex characters`)

  let hash = stated
  let hashSource: "data" | "bundle" = "bundle"
  if ("data" in options && options.data !== undefined) {
    hashSource = "data"
    // A salted encrypted record's hash commits to {"data", "salt"} (docs/verifying.md, "Salted commitments").
    const salted = b.hashScheme === "salted-jcs-sha256"
    const committed = options.salt === undefined ? options.data : { data: options.data, salt: options.salt }
    try {
      hash = createHash("sha256").update(canonicalize(committed), "utf8").digest("hex")
      if (hash !== stated) {
        problems.push(salted && options.salt === undefined
          ? `sha256(JCS(data)) = ${hash}, but the bundle states ${String(b.hash)}, a salted hash (salted-jcs-sha256): give the record's salt (options.salt)`
          : `sha256(JCS(data)) = ${hash}, but the bundle states ${String(b.hash)}: the data is not what was anchored`)
      }
    } catch (e) {
      hash = null
      problems.push(`the data cannot be canonicalized (RFC 8785): ${e instanceof Error ? e.message : String(e)}`)
    }
  }

  const list = Array.isArray(b.anchors) ? b.anchors as Array<Record<string, unknown>> : []
  if (list.length === 0) problems.push("the bundle lists no anchor")
  const anchors = list.map((a) => {
    const valid = hash !== null && included(hash, a?.merkleProof, a?.merkleRoot)
    const check = { chainType: String(a?.chainType), networkId: String(a?.networkId), merkleRoot: String(a?.merkleRoot), valid }
    if (!valid && hash !== null) problems.push(`${check.networkId}: the proof does not fold the leaf of ${hash} to root ${check.merkleRoot}`)
    return check
  })
  return { valid: problems.length === 0, hash, hashSource, anchors, problems }
}
