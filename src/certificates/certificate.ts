/**
 * Anchoring certificates (SPEC 9): a one-record PDF made from its proof bundle. It states the
 * record hash, each anchor (network, chain type, transaction, block, batch, Merkle root, time), the
 * anchoring time, the id `CERT-<unix seconds>-<first 8 hash characters>`, and a QR code that opens
 * the public verify page with the whole bundle in the link (./bundleUrl.ts): a reader checks the
 * record against the chain without trusting whoever printed the certificate.
 *
 * Pure: the same bundle and options give the same bytes (the PDF's dates are the anchoring time
 * unless `issuedAt` says otherwise). It imports nothing from other src folders: the bundle type is
 * declared here, structurally (docs/proof-format.md), so endpoints hand it any version-1 bundle.
 * PDF by pdf-lib (standard Helvetica and Courier fonts: nothing embedded), QR matrix by qrcode.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { fill, PDFDocument, type PDFFont, type PDFPage, popGraphicsState, pushGraphicsState, rectangle, rgb, setFillingRgbColor, StandardFonts } from "pdf-lib"
import QRCode from "qrcode"
import type { ProofBundle, ProofBundleAnchor } from "../api/proofBundle.ts"
import { bundleLink } from "./bundleUrl.ts"

/** One anchor of a proof bundle, version 1 (docs/proof-format.md, the wire schema of src/api/proofBundle.ts). */
export type CertificateAnchor = typeof ProofBundleAnchor.Type

/** A proof bundle, version 1: what `GET /v1/records/{id}/proof` returns in `data`. */
export type CertificateBundle = typeof ProofBundle.Type

export interface CertificateOptions {
  /** The public verify page, e.g. `https://anchord.example.com/verify` (any fragment is replaced). */
  readonly verifyUrl: string
  /** Printed as the issue date and used as the PDF's dates; default: the anchoring time. */
  readonly issuedAt?: Date | undefined
}

export class CertificateError extends Data.TaggedError("CertificateError")<{
  /** `invalid-bundle`: not a version-1 bundle with a hash and a dated anchor; `qr-capacity`: the link does not fit a QR code. */
  readonly reason: "invalid-bundle" | "invalid-url" | "qr-capacity"
  readonly message: string
}> {}

const HASH = /^[0-9a-f]{64}$/

const invalid = (message: string) => new CertificateError({ reason: "invalid-bundle", message })

/** The earliest `anchoredAt` of the bundle's anchors: when the record was first anchored. */
export const anchoringTime = (bundle: CertificateBundle): Date => {
  const times = bundle.anchors.map((a) => (a.anchoredAt ? Date.parse(a.anchoredAt) : Number.NaN)).filter((t) => Number.isFinite(t))
  if (times.length === 0) throw invalid("no anchor states a valid anchoredAt")
  return new Date(Math.min(...times))
}

/** `CERT-<unix seconds of the anchoring time>-<first 8 characters of the record hash>`. */
export const certificateId = (bundle: CertificateBundle): string => `CERT-${Math.floor(anchoringTime(bundle).getTime() / 1000)}-${bundle.hash.slice(0, 8)}`

const checkBundle = (bundle: CertificateBundle): void => {
  if (typeof bundle !== "object" || bundle === null) throw invalid("the proof bundle is not an object")
  if (bundle.version !== 1) throw invalid(`proof bundle version ${JSON.stringify(bundle.version)} is not 1`)
  if (typeof bundle.hash !== "string" || !HASH.test(bundle.hash)) throw invalid("the bundle's hash is not 64 lowercase hex characters")
  if (!Array.isArray(bundle.anchors) || bundle.anchors.length === 0) throw invalid("the bundle lists no anchor")
  anchoringTime(bundle)
}

/**
 * Error-correction levels tried, in order. M restores up to 15% of a damaged code (a fold, a stain
 * on paper) and keeps a hybrid record of a 1000-leaf batch at version 34; L (7%) only when M cannot
 * hold the link. Beyond L at version 40 the certificate is refused, never truncated.
 */
export const QR_LEVELS = ["M", "L"] as const

export interface CertificateQr {
  /** The link the code opens: the verify page with the bundle in its fragment. */
  readonly url: string
  readonly version: number
  readonly errorCorrectionLevel: (typeof QR_LEVELS)[number]
  /** Modules per side (without the quiet zone). */
  readonly size: number
  readonly isDark: (row: number, column: number) => boolean
}

/** The QR code of a bundle's verify link. @throws CertificateError when it holds more than a QR code can. */
export const certificateQr = async (bundle: CertificateBundle, verifyUrl: string): Promise<CertificateQr> => {
  let base: URL
  try {
    base = new URL(verifyUrl)
  } catch {
    throw new CertificateError({ reason: "invalid-url", message: `verifyUrl ${JSON.stringify(verifyUrl)} is not a URL` })
  }
  if (base.protocol !== "https:" && base.protocol !== "http:") {
    throw new CertificateError({ reason: "invalid-url", message: `verifyUrl must be http(s), not ${base.protocol}` })
  }
  const url = await bundleLink(verifyUrl, bundle)
  for (const level of QR_LEVELS) {
    let qr: QRCode.QRCode
    try {
      // The library splits the link into segments itself: byte mode for the page's URL, alphanumeric for the base32 bundle.
      qr = QRCode.create(url, { errorCorrectionLevel: level })
    } catch {
      continue // too much for this level
    }
    const size = qr.modules.size
    return { url, version: qr.version, errorCorrectionLevel: level, size, isDark: (r, c) => qr.modules.get(r, c) === 1 }
  }
  throw new CertificateError({
    reason: "qr-capacity",
    message: `the verify link of this bundle is ${url.length} characters (${bundle.anchors.length} anchor(s), ` +
      `${bundle.anchors.map((a) => a.merkleProof.length).join("+")} proof elements): more than a QR code holds at level L, version 40`
  })
}

// --- layout -------------------------------------------------------------------------------------

const A4: [number, number] = [595.28, 841.89]
const MARGIN = 50
const LABEL_WIDTH = 100
const INK = rgb(0.1, 0.12, 0.14)
const MUTED = rgb(0.35, 0.38, 0.42)
const RULE = rgb(0.8, 0.83, 0.86)
/** Modules of blank around the QR code, as the standard requires. */
const QUIET_ZONE = 4
/** Points per QR module, at least: 0.5 mm, what phone cameras resolve from a printed page. */
const QR_MIN_MODULE = 1.42
/** Points per side of the QR code, at most (with its quiet zone): ~10.5 cm. */
const QR_MAX_SIDE = 300

/** Standard 14 fonts write WinAnsi only: anything else in a bundle (a network id, say) is shown as "?". */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, "?")

interface Fonts {
  readonly regular: PDFFont
  readonly bold: PDFFont
  readonly mono: PDFFont
}

/** A cursor down the pages: each call draws below the previous one, on a new page when this one is full. */
class Flow {
  readonly doc: PDFDocument
  readonly fonts: Fonts
  page: PDFPage
  y: number
  constructor(doc: PDFDocument, fonts: Fonts) {
    this.doc = doc
    this.fonts = fonts
    this.page = doc.addPage(A4)
    this.y = A4[1] - MARGIN
  }

  newPage() {
    this.page = this.doc.addPage(A4)
    this.y = A4[1] - MARGIN
  }

  /** Starts a new page unless `height` points are left on this one. */
  room(height: number) {
    if (this.y - height < MARGIN) this.newPage()
  }

  text(s: string, options: { font?: PDFFont; size?: number; color?: ReturnType<typeof rgb>; x?: number; gap?: number } = {}) {
    const size = options.size ?? 10
    this.room(size + 4)
    this.page.drawText(printable(s), { x: options.x ?? MARGIN, y: this.y - size, size, font: options.font ?? this.fonts.regular, color: options.color ?? INK })
    this.y -= size + (options.gap ?? 4)
  }

  /** Words wrapped to the text width. */
  paragraph(s: string, size = 10) {
    const width = A4[0] - 2 * MARGIN
    let line = ""
    for (const word of printable(s).split(/\s+/)) {
      const next = line === "" ? word : `${line} ${word}`
      if (this.fonts.regular.widthOfTextAtSize(next, size) > width && line !== "") {
        this.text(line, { size, gap: 3 })
        line = word
      } else line = next
    }
    if (line !== "") this.text(line, { size, gap: 3 })
    this.y -= 4
  }

  /** A label and a monospaced value, the value broken into lines that fit the column. */
  row(label: string, value: string | number | null | undefined) {
    if (value === undefined || value === null || value === "") return
    const size = 9
    const x = MARGIN + LABEL_WIDTH
    const perLine = Math.floor((A4[0] - MARGIN - x) / this.fonts.mono.widthOfTextAtSize("0", size))
    const text = printable(String(value))
    const lines: Array<string> = []
    for (let i = 0; i < text.length; i += perLine) lines.push(text.slice(i, i + perLine))
    this.room(lines.length * (size + 3) + 2)
    this.page.drawText(printable(label), { x: MARGIN, y: this.y - size, size, font: this.fonts.regular, color: MUTED })
    for (const line of lines) {
      this.page.drawText(line, { x, y: this.y - size, size, font: this.fonts.mono, color: INK })
      this.y -= size + 3
    }
    this.y -= 2
  }

  rule() {
    this.room(10)
    this.y -= 4
    this.page.drawLine({ start: { x: MARGIN, y: this.y }, end: { x: A4[0] - MARGIN, y: this.y }, thickness: 0.5, color: RULE })
    this.y -= 8
  }
}

/** The QR code as filled rectangles (one per horizontal run of dark modules): sharp at any zoom and in print. */
const drawQr = (page: PDFPage, qr: CertificateQr, x: number, top: number, side: number) => {
  const module = side / (qr.size + 2 * QUIET_ZONE)
  const ops = [pushGraphicsState(), setFillingRgbColor(0, 0, 0)]
  for (let r = 0; r < qr.size; r++) {
    let c = 0
    while (c < qr.size) {
      if (!qr.isDark(r, c)) {
        c++
        continue
      }
      const start = c
      while (c < qr.size && qr.isDark(r, c)) c++
      ops.push(rectangle(x + (QUIET_ZONE + start) * module, top - (QUIET_ZONE + r + 1) * module, (c - start) * module, module))
    }
  }
  ops.push(fill(), popGraphicsState())
  page.pushOperators(...ops)
}

const utc = (d: Date) => d.toISOString().replace("T", " ").replace(/\.000Z$/, "Z").replace(/Z$/, " UTC")

const anchorTitle = (a: CertificateAnchor, i: number) =>
  a.chainType === "evm"
    ? `Anchor ${i + 1}: EVM chain, network ${a.networkId}${a.chainId !== undefined && a.chainId !== null ? ` (chain id ${a.chainId})` : ""}`
    : a.chainType === "fabric"
    ? `Anchor ${i + 1}: Hyperledger Fabric, network ${a.networkId}${a.channel ? ` (channel ${a.channel})` : ""}`
    : `Anchor ${i + 1}: ${a.chainType}, network ${a.networkId}`

/**
 * The certificate of a proof bundle, as PDF bytes.
 * @throws CertificateError (invalid bundle or verify URL, or a link too long for a QR code).
 */
export const renderCertificate = async (bundle: CertificateBundle, options: CertificateOptions): Promise<Uint8Array> => {
  checkBundle(bundle)
  const id = certificateId(bundle)
  const anchoredAt = anchoringTime(bundle)
  const issuedAt = options.issuedAt ?? anchoredAt
  const qr = await certificateQr(bundle, options.verifyUrl)

  // No automatic metadata: pdf-lib would stamp the current time, and the same input must give the same bytes.
  const doc = await PDFDocument.create({ updateMetadata: false })
  doc.setTitle(`Anchoring certificate ${id}`)
  doc.setSubject(`Record ${bundle.hash}`)
  doc.setCreator("anchord")
  doc.setProducer("anchord (pdf-lib)")
  doc.setCreationDate(issuedAt)
  doc.setModificationDate(issuedAt)
  const fonts: Fonts = {
    regular: await doc.embedFont(StandardFonts.Helvetica),
    bold: await doc.embedFont(StandardFonts.HelveticaBold),
    mono: await doc.embedFont(StandardFonts.Courier)
  }
  const flow = new Flow(doc, fonts)

  flow.text("Certificate of anchoring", { font: fonts.bold, size: 22, gap: 8 })
  flow.text(id, { font: fonts.mono, size: 12, gap: 4 })
  flow.text(`Issued ${utc(issuedAt)}`, { size: 9, color: MUTED, gap: 12 })
  flow.paragraph(
    "The record with the hash below was included in a Merkle tree whose root was written to the chain(s) listed, " +
      "in the transaction, block and batch shown. Anyone can check this against the chain itself, without trusting " +
      "the issuer: scan the QR code (the proof travels inside the link and is checked in the browser), or run " +
      "\"npx anchord verify proof.json --rpc <your endpoint>\" with the record's proof bundle."
  )
  flow.rule()
  flow.text("Record", { font: fonts.bold, size: 12, gap: 6 })
  flow.row("Record hash", bundle.hash)
  flow.row("Hashing", bundle.hashScheme === "salted-jcs-sha256"
    // A salted encrypted record: the hash proves nothing about a guess of the data without the owner's salt.
    ? `${bundle.hashAlgorithm ?? "sha256"} of ${bundle.canonicalization ?? "RFC8785-JCS"} of {"data", "salt"} (salted)`
    : `${bundle.hashAlgorithm ?? "sha256"} of ${bundle.canonicalization ?? "RFC8785-JCS"} (canonical JSON)`)
  flow.row("Record id", bundle.recordId)
  flow.row("Anchored at", utc(anchoredAt))

  // The QR code, on the first page: as large as the page allows up to QR_MAX_SIDE, and at least
  // QR_MIN_MODULE per module (a denser code needs bigger modules to scan); else on a page of its own.
  flow.rule()
  const caption = 12 + 4 + 9 + 3 + 8 + 8
  const minSide = (qr.size + 2 * QUIET_ZONE) * QR_MIN_MODULE
  if (flow.y - MARGIN - caption < minSide) flow.newPage()
  const side = Math.max(minSide, Math.min(QR_MAX_SIDE, flow.y - MARGIN - caption))
  flow.text("Verify", { font: fonts.bold, size: 12, gap: 4 })
  flow.text(`Scan to check this record in your browser, against the chain: ${options.verifyUrl.replace(/#.*$/, "")}`, { size: 9, color: MUTED, gap: 3 })
  flow.text(`QR code version ${qr.version}, error correction ${qr.errorCorrectionLevel}; the proof travels inside the link.`, { size: 8, color: MUTED, gap: 0 })
  drawQr(flow.page, qr, (A4[0] - side) / 2, flow.y, side)
  flow.y -= side

  bundle.anchors.forEach((a, i) => {
    flow.rule()
    flow.room(9 * 15)
    flow.text(anchorTitle(a, i), { font: fonts.bold, size: 11, gap: 6 })
    flow.row("Network", a.networkId)
    flow.row("Chain type", a.chainType === "evm" ? "EVM" : a.chainType === "fabric" ? "Hyperledger Fabric" : a.chainType)
    if (a.chainType === "evm") flow.row("Contract", a.contractAddress)
    else flow.row("Chaincode", [a.chaincode, a.mspId ? `(submitted by ${a.mspId})` : undefined].filter(Boolean).join(" "))
    flow.row("Transaction", a.txHash)
    flow.row("Block", a.blockNumber)
    flow.row("Block hash", a.blockHash)
    flow.row("Batch", `${a.batchId}${a.leafCount !== undefined ? ` (${a.leafCount} record${a.leafCount === 1 ? "" : "s"})` : ""}`)
    flow.row("Merkle root", a.merkleRoot)
    flow.row("Anchored at", a.anchoredAt ? utc(new Date(a.anchoredAt)) : undefined)
  })

  const pages = doc.getPages()
  pages.forEach((page, i) => {
    page.drawText(`${id} · page ${i + 1} of ${pages.length}`, { x: MARGIN, y: MARGIN / 2, size: 8, font: fonts.regular, color: MUTED })
  })

  return doc.save({ useObjectStreams: false })
}

/** {@link renderCertificate} as an Effect, for the endpoints. */
export const certificatePdf = (bundle: CertificateBundle, options: CertificateOptions): Effect.Effect<Uint8Array, CertificateError> =>
  Effect.tryPromise({
    try: () => renderCertificate(bundle, options),
    catch: (e) => e instanceof CertificateError ? e : new CertificateError({ reason: "invalid-bundle", message: e instanceof Error ? e.message : String(e) })
  })
