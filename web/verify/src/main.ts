/**
 * The public verify page (`/verify`, SPEC 9): a proof bundle, IN_PLACE document or record lookup,
 * checked in the visitor's browser by the project's own verification core (src/verify/verify.ts,
 * the code of `anchord verify`), straight against each chain's JSON-RPC; Fabric anchors are left
 * to the node (./fabric.ts). A COSE Receipt (RFC 9942) is checked by the same core
 * (src/verify/receipt.ts, `anchord verify --receipt`): ES256 signature by WebCrypto, the RFC 9162
 * inclusion proof, the root's LogRootAnchored log and verifyLogInclusion on chain. Built into
 * ../verify.js by web/build.ts.
 *
 * Everything shown comes from untrusted input (the bundle, the chain): it is only ever set as
 * text, never as HTML. ./inputs.ts reads the inputs and the node's files, ./checks.ts runs the
 * checks, ./render.ts shows the result; this file wires the form to them.
 */
import { decodeBundleFragment } from "../../../src/certificates/bundleUrl.ts"
import { verify, verifyReceiptFile } from "./checks.ts"
import { $ } from "./dom.ts"
import { FieldError, type LoadedConfig, loadConfig, manualRpcUrl, readData, readProof, receiptHash, receiptKey, Unreadable } from "./inputs.ts"
import { renderRun, renderUnreadable, showNetworks } from "./render.ts"

/** The node's network list, fetched once at start. */
let configPromise: Promise<LoadedConfig>
let running = false

const setStatus = (text: string) => {
  $("status").textContent = text
}

const clearFieldErrors = () => {
  for (const id of ["proof-text", "rpc-url", "data-file", "receipt-file", "receipt-hash", "receipt-key"]) $(id).removeAttribute("aria-invalid")
  $("form-error").textContent = ""
  $("form-error").hidden = true
}

const fieldError = (field: string, message: string) => {
  const control = $(field)
  control.setAttribute("aria-invalid", "true")
  $("form-error").textContent = message
  $("form-error").hidden = false
  control.focus()
}

const runReceipt = async (file: File, manual: string | undefined) => {
  let hash: Awaited<ReturnType<typeof receiptHash>>
  let key: Uint8Array
  try {
    hash = await receiptHash()
    key = await receiptKey()
  } catch (e) {
    if (e instanceof FieldError) return fieldError(e.field, e.message)
    throw e
  }
  const receipt = new Uint8Array(await file.arrayBuffer())
  const { config } = await configPromise
  renderRun(await verifyReceiptFile(config, receipt, hash, key, manual))
}

const run = async () => {
  if (running) return
  clearFieldErrors()
  const text = $<HTMLTextAreaElement>("proof-text").value
  const receiptFile = $<HTMLInputElement>("receipt-file").files?.[0]
  if (text.trim() === "" && receiptFile === undefined) return fieldError("proof-text", "Paste a proof, drop a file or choose one (or a COSE receipt) first.")
  let manual: string | undefined
  try {
    manual = manualRpcUrl()
  } catch (e) {
    return fieldError((e as FieldError).field, e instanceof Error ? e.message : String(e))
  }
  running = true
  $("result").setAttribute("aria-busy", "true")
  setStatus("Checking…")
  try {
    if (receiptFile !== undefined) {
      await runReceipt(receiptFile, manual)
      setStatus("")
      return
    }
    const input = readProof(text)
    const data = await readData()
    const { config } = await configPromise
    renderRun(await verify(config, input, data, manual))
    setStatus("")
  } catch (e) {
    if (!(e instanceof Unreadable)) console.error(e)
    renderUnreadable(e instanceof Error ? e.message : String(e))
    setStatus("")
  } finally {
    running = false
    $("result").setAttribute("aria-busy", "false")
  }
}

const putProof = (text: string) => {
  $<HTMLTextAreaElement>("proof-text").value = text
}

const fromFragment = async () => {
  let text: string | undefined
  try {
    text = await decodeBundleFragment(location.hash)
  } catch (e) {
    renderUnreadable(e instanceof Error ? e.message : String(e))
    return
  }
  if (text === undefined) return
  putProof(text)
  await run()
}

const start = () => {
  configPromise = loadConfig()
  void configPromise.then(showNetworks)

  $("verify-form").addEventListener("submit", (e) => {
    e.preventDefault()
    void run()
  })
  $<HTMLInputElement>("proof-file").addEventListener("change", async (e) => {
    const file = (e.target as HTMLInputElement).files?.[0]
    if (file !== undefined) putProof(await file.text())
  })
  // A file dropped anywhere on the page is the proof (keyboard users have the file input).
  const zone = $("drop-zone")
  document.addEventListener("dragover", (e) => {
    e.preventDefault()
    zone.classList.add("dragging")
  })
  document.addEventListener("dragleave", () => zone.classList.remove("dragging"))
  document.addEventListener("drop", async (e) => {
    e.preventDefault()
    zone.classList.remove("dragging")
    const file = e.dataTransfer?.files[0]
    if (file !== undefined) putProof(await file.text())
  })
  window.addEventListener("hashchange", () => void fromFragment())
  void fromFragment()
}

start()
