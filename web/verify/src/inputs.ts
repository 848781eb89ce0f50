/**
 * What the verify page reads: the node's network list and receipt key (fetched from the server that
 * serves the page), and the visitor's inputs (the pasted proof, the chosen files, the typed fields).
 * Nothing here touches the result area (./render.ts).
 */
import { parseStrictJson } from "../../../src/canonical/strictJson.ts"
import { recordHash } from "../../../src/canonical/jcs.ts"
import { readInput, type VerifyInput } from "../../../src/verify/input.ts"
import { parseConfig, type VerifyPageConfig } from "./config.ts"
import { $ } from "./dom.ts"

const CONFIG_URL = "/verify/config.json"
/** The receipt key of the node serving this page (src/receipts/http.ts), used when none is pasted. */
const RECEIPT_KEY_URL = "/.well-known/anchord-receipt-key.pem"
const MAX_JSON_DEPTH = 128

// --- the node's configuration ---------------------------------------------------------------------

export interface LoadedConfig {
  readonly config: VerifyPageConfig
  /** Why there is no (or a partial) network list, for the visitor. */
  readonly notice?: string | undefined
}

export const loadConfig = async (): Promise<LoadedConfig> => {
  try {
    const response = await fetch(CONFIG_URL, { cache: "no-store", headers: { accept: "application/json" } })
    if (!response.ok) return { config: { networks: [] }, notice: `The node's network list could not be loaded (HTTP ${response.status}).` }
    const { config, problems } = parseConfig(await response.json())
    for (const p of problems) console.warn(`verify page: ${CONFIG_URL}: ${p}`)
    return { config, notice: problems.length > 0 ? `Some of the node's networks were left out (${problems.join("; ")}).` : undefined }
  } catch (e) {
    return { config: { networks: [] }, notice: `The node's network list could not be loaded (${e instanceof Error ? e.message : String(e)}).` }
  }
}

// --- the visitor's inputs ---------------------------------------------------------------------------

export class Unreadable extends Error {}

export const parseJson = (text: string, what: string): unknown => {
  try {
    return parseStrictJson(text, { maxDepth: MAX_JSON_DEPTH })
  } catch (e) {
    throw new Unreadable(`${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`)
  }
}

export const readProof = (text: string): VerifyInput => {
  try {
    return readInput(parseJson(text, "the proof"))
  } catch (e) {
    throw e instanceof Unreadable ? e : new Unreadable(e instanceof Error ? e.message : String(e))
  }
}

export const manualRpcUrl = (): string | undefined => {
  const raw = $<HTMLInputElement>("rpc-url").value.trim()
  if (raw === "") return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new FieldError("rpc-url", `${raw} is not a URL`)
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new FieldError("rpc-url", "the JSON-RPC URL must start with https:// or http://")
  return url.toString()
}

export class FieldError extends Error {
  readonly field: string
  constructor(field: string, message: string) {
    super(message)
    this.field = field
  }
}

/** The data file's JSON, when one is chosen (its hash is then recomputed from it). */
export const readData = async (): Promise<{ value: unknown } | undefined> => {
  const dataFile = $<HTMLInputElement>("data-file").files?.[0]
  return dataFile === undefined ? undefined : { value: parseJson(await dataFile.text(), `the data file ${dataFile.name}`) }
}

/** PEM (SPKI) → DER; a pasted key may carry other text around the block. */
const pemToSpki = (pem: string): Uint8Array => {
  const m = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/.exec(pem)
  if (m === null) throw new FieldError("receipt-key", "the receipt key must be a PEM public key (-----BEGIN PUBLIC KEY-----)")
  try {
    return Uint8Array.from(atob(m[1]!.replace(/\s+/g, "")), (c) => c.charCodeAt(0))
  } catch {
    throw new FieldError("receipt-key", "the receipt key's PEM block is not base64")
  }
}

/** The pasted receipt key, or the key of the node serving this page. */
export const receiptKey = async (): Promise<Uint8Array> => {
  const pasted = $<HTMLTextAreaElement>("receipt-key").value.trim()
  if (pasted !== "") return pemToSpki(pasted)
  let response: Response
  try {
    response = await fetch(RECEIPT_KEY_URL, { cache: "no-store", credentials: "omit" })
  } catch (e) {
    throw new FieldError("receipt-key",
      `no receipt key given, and ${RECEIPT_KEY_URL} could not be loaded (${e instanceof Error ? e.message : String(e)}): paste the key`)
  }
  if (!response.ok) {
    throw new FieldError("receipt-key", `no receipt key given, and this server has none at ${RECEIPT_KEY_URL} (HTTP ${response.status}): paste the key`)
  }
  return pemToSpki(await response.text())
}

/** The record hash a receipt is checked for: recomputed from the data file, or as typed. */
export const receiptHash = async (): Promise<{ readonly hex: string; readonly source: "data" | "bundle" }> => {
  const dataFile = $<HTMLInputElement>("data-file").files?.[0]
  if (dataFile !== undefined) return { hex: recordHash(parseJson(await dataFile.text(), `the data file ${dataFile.name}`)), source: "data" }
  const typed = $<HTMLInputElement>("receipt-hash").value.trim().replace(/^0x/i, "").toLowerCase()
  if (typed === "") throw new FieldError("receipt-hash", "A receipt is checked for a record: choose its data file or enter its hash.")
  if (!/^[0-9a-f]{64}$/.test(typed)) throw new FieldError("receipt-hash", "The record hash is 64 hex characters (SHA-256).")
  return { hex: typed, source: "bundle" }
}
