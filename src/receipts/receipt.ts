/**
 * COSE Receipts (RFC 9942) for anchored records, `vds` = RFC9162_SHA256: the shape, and its
 * verification (docs/proof-format.md, "COSE Receipts"). Pure (cbor2 + WebCrypto): the node builds
 * receipts with it (src/receipts/http.ts), `anchord verify` and the verify page check them.
 *
 *   18([                                       COSE_Sign1, tagged
 *     << { 1: -7, 4: kid, 395: 1 } >>,         protected: alg ES256, kid, vds RFC9162_SHA256
 *     { 396: { -1: [ << [size, index, [path]] >> ] },   vdp: one inclusion proof (RFC 9942 §5.2)
 *       "anchord-anchor": { chainType, networkId, ..., txHash, blockNumber, blockHash, logRoot } },
 *     nil,                                     detached payload: the tree root, recomputed by the verifier
 *     signature ])                             ES256 over Sig_structure("Signature1", protected, h'', root)
 *
 * The leaf is the record hash (32 bytes, `sha256(JCS(data))`); the leaf hash SHA-256(0x00 || hash).
 */
import { rootFromInclusionProof } from "../tlog/check.ts"
import { leafHash } from "../tlog/hash.ts"
import { type CborValue, decode, encode, Tag } from "./cbor.ts"

export const COSE_SIGN1_TAG = 18
export const HEADER_ALG = 1
export const HEADER_KID = 4
/** RFC 9942: verifiable data structure (protected) and verifiable data proofs (unprotected). */
export const HEADER_VDS = 395
export const HEADER_VDP = 396
export const VDS_RFC9162_SHA256 = 1
export const PROOF_INCLUSION = -1
export const ALG_ES256 = -7
/** Our own unprotected header parameter: where the tree root is anchored (a text label, so it cannot collide with a registered one). */
export const HEADER_ANCHOR = "anchord-anchor"

/** The anchor of a receipt's tree root: the transaction that committed it (docs/proof-format.md). */
export interface ReceiptAnchor {
  readonly chainType: "evm" | "fabric"
  readonly networkId: string
  /** EVM */
  readonly chainId?: number | undefined
  readonly contractAddress?: string | undefined
  /** Fabric */
  readonly channel?: string | undefined
  readonly chaincode?: string | undefined
  readonly batchId: number | string
  /** The batch's OpenZeppelin root (the proof bundle's `merkleRoot`), 0x hex: the on-chain key of the batch. */
  readonly merkleRoot: string
  /** The RFC 9162 root the receipt signs, 0x hex (informative: the verifier recomputes it). */
  readonly logRoot: string
  readonly txHash: string
  readonly blockNumber: number
  readonly blockHash: string | null
  readonly anchoredAt: string | null
}

export interface InclusionProof {
  readonly treeSize: number
  readonly leafIndex: number
  readonly path: ReadonlyArray<Uint8Array>
}

export interface ParsedReceipt {
  readonly protectedBytes: Uint8Array
  readonly alg: number
  readonly vds: number
  readonly kid: Uint8Array | undefined
  readonly inclusion: InclusionProof
  readonly anchor: ReceiptAnchor | undefined
  readonly signature: Uint8Array
}

export class ReceiptError extends Error {
  override readonly name = "ReceiptError"
}

export const protectedHeader = (kid: Uint8Array): Uint8Array =>
  encode(new Map<CborValue, CborValue>([[HEADER_ALG, ALG_ES256], [HEADER_KID, kid], [HEADER_VDS, VDS_RFC9162_SHA256]]))

/** RFC 9052 §4.4: the bytes an ES256 signature of a COSE_Sign1 covers. */
export const sigStructure = (protectedBytes: Uint8Array, payload: Uint8Array): Uint8Array => encode(["Signature1", protectedBytes, new Uint8Array(0), payload])

const anchorMap = (a: ReceiptAnchor): Map<CborValue, CborValue> => {
  const m = new Map<CborValue, CborValue>()
  for (const [k, v] of Object.entries(a)) if (v !== undefined) m.set(k, v as CborValue)
  return m
}

/** The receipt's bytes, given the signature over `sigStructure(protectedHeader(kid), root)`. */
export const encodeReceipt = (
  protectedBytes: Uint8Array,
  inclusion: InclusionProof,
  anchor: ReceiptAnchor,
  signature: Uint8Array
): Uint8Array => {
  const proof = encode([inclusion.treeSize, inclusion.leafIndex, [...inclusion.path]])
  const unprotected = new Map<CborValue, CborValue>([
    [HEADER_VDP, new Map<CborValue, CborValue>([[PROOF_INCLUSION, [proof]]])],
    [HEADER_ANCHOR, anchorMap(anchor)]
  ])
  return encode(new Tag(COSE_SIGN1_TAG, [protectedBytes, unprotected, null, signature]))
}

const fail = (message: string): never => {
  throw new ReceiptError(message)
}

const asMap = (v: CborValue | undefined, what: string): ReadonlyMap<CborValue, CborValue> => v instanceof Map ? v : fail(`${what} is not a map`)
const asBytes = (v: CborValue | undefined, what: string): Uint8Array => v instanceof Uint8Array ? v : fail(`${what} is not a byte string`)
const asUint = (v: CborValue | undefined, what: string): number =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : fail(`${what} is not an unsigned integer`)

const readAnchor = (v: CborValue | undefined): ReceiptAnchor | undefined => {
  if (v === undefined) return undefined
  const m = asMap(v, HEADER_ANCHOR)
  const o: Record<string, unknown> = {}
  for (const [k, x] of m) if (typeof k === "string") o[k] = typeof x === "bigint" ? Number(x) : x
  if (o["chainType"] !== "evm" && o["chainType"] !== "fabric") fail(`${HEADER_ANCHOR}.chainType must be "evm" or "fabric"`)
  for (const k of ["networkId", "merkleRoot", "logRoot", "txHash"]) if (typeof o[k] !== "string") fail(`${HEADER_ANCHOR}.${k} must be text`)
  if (typeof o["blockNumber"] !== "number") fail(`${HEADER_ANCHOR}.blockNumber must be an integer`)
  return o as unknown as ReceiptAnchor
}

/**
 * The parts of a receipt, checked for shape: a COSE_Sign1 (tag 18 or untagged), ES256, `vds` 1, exactly
 * one inclusion proof. Says nothing about the signature or the proof: see `verifyReceipt`.
 * @throws ReceiptError (CborError for bytes that are not CBOR).
 */
export const parseReceipt = (bytes: Uint8Array): ParsedReceipt => {
  let top = decode(bytes)
  if (top instanceof Tag) {
    if (top.tag !== COSE_SIGN1_TAG) fail(`CBOR tag ${top.tag} is not COSE_Sign1 (18)`)
    top = top.contents as CborValue
  }
  if (!Array.isArray(top) || top.length !== 4) fail("not a COSE_Sign1 (an array of 4)")
  const [p, u, payload, sig] = top as ReadonlyArray<CborValue>
  const protectedBytes = asBytes(p, "protected header")
  const prot = asMap(decode(protectedBytes), "protected header")
  const alg = prot.get(HEADER_ALG)
  if (alg !== ALG_ES256) fail(`alg ${String(alg)} is not ES256 (-7)`)
  const vds = prot.get(HEADER_VDS)
  if (vds !== VDS_RFC9162_SHA256) fail(`vds ${String(vds)} is not RFC9162_SHA256 (1)`)
  const kid = prot.get(HEADER_KID)
  const unprotected = asMap(u, "unprotected header")
  const vdp = asMap(unprotected.get(HEADER_VDP), "vdp (396)")
  const proofs = vdp.get(PROOF_INCLUSION)
  if (!Array.isArray(proofs) || proofs.length !== 1) fail("vdp must hold exactly one inclusion proof (-1)")
  const inner = decode(asBytes((proofs as ReadonlyArray<CborValue>)[0], "inclusion proof"))
  if (!Array.isArray(inner) || inner.length !== 3) fail("inclusion proof is not [tree-size, leaf-index, path]")
  const [size, index, path] = inner as ReadonlyArray<CborValue>
  if (!Array.isArray(path)) fail("inclusion path is not an array")
  if (payload !== null) fail("the payload must be detached (nil): the verifier recomputes the tree root")
  const signature = asBytes(sig, "signature")
  if (signature.length !== 64) fail("an ES256 signature is 64 bytes (r || s)")
  return {
    protectedBytes,
    alg: ALG_ES256,
    vds: VDS_RFC9162_SHA256,
    kid: kid instanceof Uint8Array ? kid : undefined,
    inclusion: {
      treeSize: asUint(size, "tree size"),
      leafIndex: asUint(index, "leaf index"),
      path: (path as ReadonlyArray<CborValue>).map((x, i) => {
        const b = asBytes(x, `path[${i}]`)
        return b.length === 32 ? b : fail(`path[${i}] is not 32 bytes`)
      })
    },
    anchor: readAnchor(unprotected.get(HEADER_ANCHOR)),
    signature
  }
}

/** The tree root the inclusion proof gives for a record hash (32 bytes), or undefined when the proof does not fit its size. */
export const receiptRoot = (r: ParsedReceipt, recordHash: Uint8Array): Uint8Array | undefined =>
  rootFromInclusionProof(r.inclusion.leafIndex, r.inclusion.treeSize, leafHash(recordHash), r.inclusion.path)

// Typed without node:crypto's webcrypto types: the verify page type-checks this file with the DOM
// library (web/tsconfig.json), whose CryptoKey and BufferSource are other (equal) types.
const subtle = () => globalThis.crypto.subtle
/** A copy on a plain ArrayBuffer: a BufferSource in both libraries' typings. */
const own = (b: Uint8Array): Uint8Array<ArrayBuffer> => Uint8Array.from(b)
export type ReceiptPublicKey = Awaited<ReturnType<ReturnType<typeof subtle>["importKey"]>>

/** An ES256 public key (SPKI DER) for WebCrypto. */
export const importReceiptKey = (spki: Uint8Array): Promise<ReceiptPublicKey> =>
  subtle().importKey("spki", own(spki), { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"])

/** True when the signature covers `root` (the detached payload) under `key`. */
export const signatureValid = (r: ParsedReceipt, root: Uint8Array, key: ReceiptPublicKey): Promise<boolean> =>
  subtle().verify({ name: "ECDSA", hash: "SHA-256" }, key, own(r.signature), own(sigStructure(r.protectedBytes, root)))
