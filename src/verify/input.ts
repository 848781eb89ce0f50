/**
 * What `anchord verify` and `POST /v1/verify` accept, normalised to one proof bundle plus the data
 * (when the input carries it). Plain functions over parsed JSON: no node, no database.
 *
 * Accepted shapes (docs/verifying.md):
 * - a proof bundle (docs/proof-format.md), or the `GET /v1/records/{id}/proof` response around it;
 * - an `IN_PLACE` document: the record's data with the bundle embedded as `_anchor`;
 * - a record lookup (`GET /v1/records/{id}`): the response `{success, data}` or the record itself.
 *   Its `data` is hashed when present; an `IN_PLACE` record's `data._anchor` is the bundle, others
 *   are turned into a bundle from their `anchors` (which carry no block hash: that check is then
 *   made against the receipt only).
 */
import { excerpt } from "../excerpt.ts"

export interface BundleAnchor {
  readonly chainType: "evm" | "fabric"
  readonly networkId: string
  readonly chainId?: number | null | undefined
  readonly contractAddress?: string | null | undefined
  readonly channel?: string | null | undefined
  readonly chaincode?: string | null | undefined
  readonly mspId?: string | null | undefined
  readonly batchId: number | string
  readonly merkleRoot: string
  readonly merkleProof: ReadonlyArray<string>
  readonly leafIndex?: number | undefined
  readonly leafCount?: number | undefined
  readonly txHash: string
  readonly blockNumber: number | null
  readonly blockHash?: string | null | undefined
  readonly anchoredAt?: string | null | undefined
}

export interface Bundle {
  readonly version: number
  readonly recordId?: string | undefined
  readonly hash: string
  readonly hashAlgorithm?: string | undefined
  readonly canonicalization?: string | undefined
  readonly leafEncoding?: string | undefined
  /** `salted-jcs-sha256`: hash = sha256(JCS({"data": data, "salt": salt})) (docs/verifying.md). */
  readonly hashScheme?: string | undefined
  /** The salt, in a decrypted IN_PLACE document's `_anchor` only. */
  readonly salt?: string | undefined
  readonly anchors: ReadonlyArray<BundleAnchor>
}

export const SALTED = "salted-jcs-sha256"

/** What a salted record's hash commits to: its data and salt, as one JSON object (docs/verifying.md). */
export const saltedCommitment = (data: unknown, salt: string) => ({ data, salt })

export type InputKind = "bundle" | "in-place" | "record"

export interface VerifyInput {
  readonly kind: InputKind
  readonly bundle: Bundle
  /** The record's data, when the input carried it (`hasData` tells null data from none). */
  readonly hasData: boolean
  readonly data?: unknown
}

export class InputError extends Error {
  readonly _tag = "InputError"
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

const looksLikeBundle = (v: unknown): v is Record<string, unknown> => isObject(v) && "version" in v && typeof v.hash === "string" && Array.isArray(v.anchors)

const looksLikeRecord = (v: unknown): v is Record<string, unknown> =>
  isObject(v) && typeof v.recordId === "string" && typeof v.hash === "string" && Array.isArray(v.anchors) && "status" in v

/** The data of an IN_PLACE document: everything but `_anchor`. */
export const withoutAnchor = (doc: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(doc)) if (k !== "_anchor") out[k] = doc[k]
  return out
}

/** Checks the members verification relies on; the message names the first bad one. */
export const checkBundle = (v: Record<string, unknown>, where = ""): Bundle => {
  const fail = (m: string): never => {
    throw new InputError(`${where}${m}`)
  }
  if (v.version !== 1) fail(`version: ${excerpt(String(JSON.stringify(v.version)))} is not a supported proof bundle version (1)`)
  if (typeof v.hash !== "string") fail("hash: missing")
  if (v.hashAlgorithm !== undefined && v.hashAlgorithm !== "sha256") fail(`hashAlgorithm: ${excerpt(String(v.hashAlgorithm))} is not supported`)
  if (v.canonicalization !== undefined && v.canonicalization !== "RFC8785-JCS") {
    fail(`canonicalization: ${excerpt(String(v.canonicalization))} is not supported`)
  }
  if (v.leafEncoding !== undefined && v.leafEncoding !== "openzeppelin-standard-merkle-tree:bytes32") {
    fail(`leafEncoding: ${excerpt(String(v.leafEncoding))} is not supported`)
  }
  if (v.hashScheme !== undefined && v.hashScheme !== SALTED) fail(`hashScheme: ${String(v.hashScheme)} is not supported`)
  if (v.salt !== undefined && typeof v.salt !== "string") fail("salt: expected a string")
  if (!Array.isArray(v.anchors)) fail("anchors: missing")
  const anchors = v.anchors as Array<unknown>
  anchors.forEach((a, i) => {
    const at = `anchors[${i}].`
    if (!isObject(a)) return fail(`${at.slice(0, -1)}: not an object`)
    if (a.chainType !== "evm" && a.chainType !== "fabric") fail(`${at}chainType: expected "evm" or "fabric"`)
    if (typeof a.networkId !== "string") fail(`${at}networkId: missing`)
    if (typeof a.merkleRoot !== "string") fail(`${at}merkleRoot: missing`)
    if (!Array.isArray(a.merkleProof) || !a.merkleProof.every((p) => typeof p === "string")) fail(`${at}merkleProof: expected an array of hex strings`)
    if (typeof a.txHash !== "string") fail(`${at}txHash: missing`)
    if (typeof a.batchId !== "number" && typeof a.batchId !== "string") fail(`${at}batchId: missing`)
    if (a.blockNumber !== null && typeof a.blockNumber !== "number") fail(`${at}blockNumber: expected a number or null`)
  })
  return v as unknown as Bundle
}

/** An IN_PLACE document: the data without `_anchor`, with the salt of a salted record's `_anchor`. */
const inPlace = (doc: Record<string, unknown>, where: string): VerifyInput => {
  const bundle = checkBundle(doc._anchor as Record<string, unknown>, where)
  const data = withoutAnchor(doc)
  const salt = bundle.hashScheme === SALTED ? bundle.salt : undefined
  return { kind: "in-place", bundle, hasData: true, data: salt === undefined ? data : saltedCommitment(data, salt) }
}

/** Normalises any accepted input (already parsed JSON). @throws InputError */
export const readInput = (parsed: unknown): VerifyInput => {
  let doc = parsed
  // An API response: {success: true, data: …}
  if (isObject(doc) && doc.success === true && "data" in doc && (isObject(doc.data))) doc = doc.data
  if (looksLikeBundle(doc) && !looksLikeRecord(doc)) {
    return { kind: "bundle", bundle: checkBundle(doc), hasData: false }
  }
  if (looksLikeRecord(doc)) {
    const data = doc.data
    if (isObject(data) && isObject(data._anchor)) return inPlace(data, "data._anchor.")
    const salted = doc.hashScheme === SALTED
    const bundle = checkBundle({
      version: 1,
      recordId: doc.recordId,
      hash: doc.hash,
      ...(salted ? { hashScheme: SALTED } : {}),
      anchors: doc.anchors
    })
    // Encrypted records without plaintext, SEPARATED and hash-only records come without data. A decrypted
    // salted record carries its salt beside its data: the hash commits to both.
    const hasData = data !== null && data !== undefined
    const committed = salted && typeof doc.salt === "string" ? saltedCommitment(data, doc.salt) : data
    return { kind: "record", bundle, hasData, ...(hasData ? { data: committed } : {}) }
  }
  if (isObject(doc) && isObject(doc._anchor)) return inPlace(doc, "_anchor.")
  // A saved API error ({"success":false,"error":…,"errorCode":…}), e.g. the proof of a deleted record (410).
  if (isObject(doc) && doc.success === false && (typeof doc.error === "string" || typeof doc.errorCode === "string")) {
    throw new InputError(
      `this file is an API error response: ${excerpt(String(doc.errorCode ?? "error"))}: ${excerpt(String(doc.error ?? ""), 200)}, not a proof bundle`
    )
  }
  throw new InputError(
    "not a proof bundle, an IN_PLACE document (data with an _anchor member) or a record lookup response"
  )
}
