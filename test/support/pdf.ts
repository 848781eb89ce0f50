/**
 * Reading PDFs in tests as a viewer would: text through pdfjs-dist (Mozilla's PDF.js), pages
 * rendered to pixels (PDF.js on @napi-rs/canvas), and QR codes in those pixels decoded with jsQR.
 */
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import jsQRModule from "jsqr"
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs"
import { ROOT_DIR } from "./logs.ts"

const PDFJS_DIR = Path.join(ROOT_DIR, "node_modules/pdfjs-dist")

/** Runs `f` on the parsed document, then frees it (and PDF.js's worker). */
const withPdf = async <A>(bytes: Uint8Array, f: (doc: any) => Promise<A>): Promise<A> => {
  const task = getDocument({
    // PDF.js takes ownership of (detaches) the buffer it is given.
    data: new Uint8Array(bytes),
    standardFontDataUrl: pathToFileURL(`${PDFJS_DIR}/standard_fonts/`).href,
    verbosity: 0
  })
  try {
    return await f(await task.promise)
  } finally {
    await task.destroy()
  }
}

/** The text of each page, its items joined by spaces. */
export const pdfText = (bytes: Uint8Array): Promise<Array<string>> =>
  withPdf(bytes, async (doc) => {
    const pages: Array<string> = []
    for (let n = 1; n <= doc.numPages; n++) {
      const content = await (await doc.getPage(n)).getTextContent()
      pages.push(content.items.map((i: { str?: string }) => i.str ?? "").join(" "))
    }
    return pages
  })

export interface Pixels {
  readonly width: number
  readonly height: number
  /** RGBA, row by row. */
  readonly data: Uint8ClampedArray
}

/** Page `n` (from 1) rendered at `scale` pixels per point. */
export const renderPage = (bytes: Uint8Array, n: number, scale: number): Promise<Pixels> =>
  withPdf(bytes, async (doc) => {
    const page = await doc.getPage(n)
    const viewport = page.getViewport({ scale })
    const width = Math.ceil(viewport.width)
    const height = Math.ceil(viewport.height)
    // In Node, PDF.js's canvas factory makes @napi-rs/canvas canvases.
    const { canvas, context } = doc.canvasFactory.create(width, height)
    await page.render({ canvas, viewport }).promise
    return { width, height, data: new Uint8ClampedArray(context.getImageData(0, 0, width, height).data) }
  })

// jsqr is CommonJS with an ES-style `default`: Node's import gives the function itself, TypeScript the namespace.
const jsQR = ((jsQRModule as { default?: unknown }).default ?? jsQRModule) as typeof jsQRModule.default

/** The text of the QR code in the pixels, if jsQR finds one. */
export const decodeQr = (image: Pixels): string | undefined => jsQR(image.data, image.width, image.height, { inversionAttempts: "dontInvert" })?.data

/** The number of pages. */
export const pageCount = (bytes: Uint8Array): Promise<number> => withPdf(bytes, async (doc) => doc.numPages)

/**
 * The first QR code found in the document: each page rendered at a few scales, as a phone camera
 * sees a page from a few distances (jsQR misses a dense code at some module sizes).
 */
export const qrOfPdf = async (bytes: Uint8Array,
  scales: ReadonlyArray<number> = [2, 2.5, 3, 1.75]): Promise<{ text: string; page: number; scale: number } | undefined> =>
{
  const pages = await pageCount(bytes)
  for (let page = 1; page <= pages; page++) {
    for (const scale of scales) {
      const text = decodeQr(await renderPage(bytes, page, scale))
      if (text !== undefined) return { text, page, scale }
    }
  }
  return undefined
}
