// Certificates (src/certificates/certificate.ts) read back as a viewer would: the PDF's text by
// PDF.js, its page rendered to pixels and the QR code decoded by jsQR, to exactly the verify link,
// whose bundle is the input bundle. The QR capacity is measured for large bundles, and a bundle
// too large is refused, not truncated. (Opening a certificate's link in the verify page against a
// real chain: test/web/verify-page.test.ts.) The endpoints, GET /v1/records/{id}/certificate and
// GET /v1/certificate/{hash}, on a node anchoring on Anvil: the PDF served is read back the same way.
//   npx vitest run test/certificates/certificate.test.ts
import { createHash } from "node:crypto"
import * as Http from "node:http"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bundleLink, decodeBundleFragment } from "../../src/certificates/bundleUrl.ts"
import { certificateId, certificatePdf, certificateQr, CertificateError, renderCertificate,
  type CertificateBundle } from "../../src/certificates/certificate.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { call } from "../support/node.ts"
import { pageCount, pdfText, qrOfPdf } from "../support/pdf.ts"
import { startVerifyEnv, type VerifyEnv } from "../verify/support.ts"

// Fabric and hybrid records are refused on a node no Fabric network serves (CHAIN_NOT_CONFIGURED);
// naming one here, served by no node of this test, keeps them accepted and QUEUED, as this file needs.
process.env.FABRIC_TEST_NETWORK_ID = "fabric-unserved"
process.env.FABRIC_LIVE_NETWORK_ID = "fabric-unserved"

const VERIFY_URL = "https://anchord.example.com/verify"

/** GET of a PDF with a Host header of our choosing (fetch does not let one set it), to the node on loopback. */
const pdfWithHost = (url: string, key: string, host: string) =>
  new Promise<Uint8Array>((resolve, reject) => {
    const target = new URL(url)
    Http.get({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      headers: { host, "x-forwarded-host": host, "x-forwarded-proto": "https", authorization: `Bearer ${key}` }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (c: Buffer) => chunks.push(c))
      response.on("end",
        () => response.statusCode === 200 ? resolve(new Uint8Array(Buffer.concat(chunks))) : reject(new Error(`status ${response.statusCode}`)))
    }).on("error", reject)
  })

/** Deterministic 32-byte hex values (the same bundle, hence the same QR code, on every run). */
let counter = 0
const hex32 = () => createHash("sha256").update(`certificate-test-${counter++}`).digest("hex")

/** A bundle as the node serves it, with `proofLength` elements per anchor (1000 leaves: 10). */
const bundleOf = (proofLength: number, chains: ReadonlyArray<"evm" | "fabric">): CertificateBundle => ({
  version: 1,
  recordId: hex32().slice(0, 24),
  hash: hex32(),
  hashAlgorithm: "sha256",
  canonicalization: "RFC8785-JCS",
  leafEncoding: "openzeppelin-standard-merkle-tree:bytes32",
  anchors: chains.map((chain, i) =>
    chain === "evm"
      ? {
        chainType: "evm",
        networkId: "sepolia",
        chainId: 11155111,
        contractAddress: `0x${hex32().slice(0, 40)}`,
        batchId: 48213,
        merkleRoot: `0x${hex32()}`,
        merkleProof: Array.from({ length: proofLength }, () => `0x${hex32()}`),
        leafIndex: 517,
        leafCount: 2 ** proofLength - 24 > 0 ? 2 ** proofLength - 24 : 1,
        txHash: `0x${hex32()}`,
        blockNumber: 7654321,
        blockHash: `0x${hex32()}`,
        anchoredAt: `2026-11-22T02:37:${30 + i}.000Z`
      }
      : {
        chainType: "fabric",
        networkId: "fabric-byo",
        channel: "anchord",
        chaincode: "anchord",
        mspId: "Org1MSP",
        batchId: "7f0c3e2a-5b1d-4c8e-9a6f-2d4b8e1c0f37",
        merkleRoot: `0x${hex32()}`,
        merkleProof: Array.from({ length: proofLength }, () => `0x${hex32()}`),
        leafIndex: 517,
        leafCount: 2 ** proofLength - 24 > 0 ? 2 ** proofLength - 24 : 1,
        txHash: hex32(),
        blockNumber: 1234,
        blockHash: hex32(),
        anchoredAt: `2026-11-22T02:37:${30 + i}.123Z`
      }
  )
})

describe("certificates", () => {
  it("a hybrid record of a 1000-leaf batch: the text states its facts, the QR code opens the verify page with its exact bundle", async () => {
    const bundle = bundleOf(10, ["evm", "fabric"])
    const pdf = await renderCertificate(bundle, { verifyUrl: VERIFY_URL })
    expect(Buffer.from(pdf.subarray(0, 5)).toString()).toBe("%PDF-")

    const id = certificateId(bundle)
    expect(id).toBe(`CERT-${Date.parse("2026-11-22T02:37:30.000Z") / 1000}-${bundle.hash.slice(0, 8)}`)
    const text = (await pdfText(pdf)).join("\n")
    for (const fact of [id, bundle.hash, bundle.recordId!, "2026-11-22 02:37:30 UTC", "sepolia", "chain id 11155111", "fabric-byo", "channel anchord",
      "Hyperledger Fabric"])
    {
      expect(text, fact).toContain(fact)
    }
    for (const a of bundle.anchors) {
      for (const fact of [a.txHash, a.merkleRoot, a.blockHash!, String(a.blockNumber), String(a.batchId)]) expect(text, fact).toContain(fact)
    }

    const qr = await certificateQr(bundle, VERIFY_URL)
    console.log(`hybrid, 10 proof elements per anchor: link ${qr.url.length} characters, QR version ${qr.version}, level ${qr.errorCorrectionLevel}`)
    expect(qr.errorCorrectionLevel).toBe("M")
    expect(qr.version).toBeLessThanOrEqual(36)

    const found = await qrOfPdf(pdf)
    expect(found, "a QR code on the certificate").toBeDefined()
    expect(found!.page).toBe(1)
    expect(found!.text).toBe(await bundleLink(VERIFY_URL, bundle))
    expect(found!.text).toBe(qr.url)
    const link = new URL(found!.text)
    expect(`${link.origin}${link.pathname}`).toBe(VERIFY_URL)
    expect(JSON.parse((await decodeBundleFragment(link.hash))!)).toEqual(bundle)
  }, 60_000)

  it("names a batch's size with the right plural: 1 record, 1000 records", async () => {
    // PDF.js gives the words of a line as separate items: compare with single spaces.
    const textOf = async (bundle: CertificateBundle) =>
      (await pdfText(await renderCertificate(bundle, { verifyUrl: VERIFY_URL }))).join(" ").replace(/\s+/g, " ")
    const one = await textOf(bundleOf(0, ["evm"]))
    expect(one).toContain("Batch 48213 (1 record) Merkle root")
    expect(one).not.toContain("(1 records)")
    expect(await textOf(bundleOf(10, ["evm"]))).toContain("Batch 48213 (1000 records) Merkle root")
  }, 60_000)

  it("is pure: the same bundle gives the same bytes; the id and dates follow the earliest anchoring time", async () => {
    const bundle = bundleOf(3, ["fabric", "evm"])
    const a = await renderCertificate(bundle, { verifyUrl: VERIFY_URL })
    const b = await renderCertificate(structuredClone(bundle), { verifyUrl: `${VERIFY_URL}#ignored` })
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true)
    const issued = await renderCertificate(bundle, { verifyUrl: VERIFY_URL, issuedAt: new Date("2027-01-02T03:04:05Z") })
    expect(Buffer.from(issued).equals(Buffer.from(a))).toBe(false)
    expect((await pdfText(issued)).join(" ")).toContain("Issued 2027-01-02 03:04:05 UTC")
    // The Fabric anchor (02:37:30.123) came before the EVM one (02:37:31): the id uses the earlier, in seconds.
    expect(certificateId(bundle)).toBe(`CERT-${Math.floor(Date.parse("2026-11-22T02:37:30.123Z") / 1000)}-${bundle.hash.slice(0, 8)}`)
  })

  it("QR capacity: large bundles fit at level M, the largest at L, and one beyond a QR code is refused", async () => {
    const rows: Array<string> = []
    const levelOf = async (proofLength: number, chains: ReadonlyArray<"evm" | "fabric">) => {
      const qr = await certificateQr(bundleOf(proofLength, chains), VERIFY_URL)
      rows.push(`${chains.join("+")} ${proofLength} proof elements per anchor: ${qr.url.length} characters, version ${qr.version}-${qr.errorCorrectionLevel}`)
      return qr.errorCorrectionLevel
    }
    // 2^10 = 1,024 and 2^14 = 16,384 leaves per batch: level M; 2^20 leaves: L.
    expect(await levelOf(10, ["evm"])).toBe("M")
    expect(await levelOf(20, ["evm"])).toBe("M")
    expect(await levelOf(10, ["evm", "fabric"])).toBe("M")
    expect(await levelOf(14, ["evm", "fabric"])).toBe("M")
    expect(await levelOf(20, ["evm", "fabric"])).toBe("L")
    console.log(rows.join("\n"))

    const huge = bundleOf(24, ["evm", "fabric", "evm"])
    const error = await renderCertificate(huge, { verifyUrl: VERIFY_URL }).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(CertificateError)
    expect((error as CertificateError).reason).toBe("qr-capacity")
    expect((error as CertificateError).message).toMatch(
      /^the verify link of this bundle is \d+ characters \(3 anchor\(s\), 24\+24\+24 proof elements\): more than a QR code holds/
    )

    // A single-leaf batch: an empty proof, one page.
    const small = await renderCertificate(bundleOf(0, ["evm"]), { verifyUrl: VERIFY_URL })
    expect(await pageCount(small)).toBe(1)
  }, 60_000)

  it("refuses what is not a version-1 bundle or an http(s) verify URL, as a typed failure in Effect", async () => {
    const bundle = bundleOf(1, ["evm"])
    const failure = (b: unknown, verifyUrl = VERIFY_URL) => Effect.runPromise(Effect.flip(certificatePdf(b as CertificateBundle, { verifyUrl })))
    expect((await failure({ ...bundle, version: 2 })).reason).toBe("invalid-bundle")
    expect((await failure({ ...bundle, hash: "XYZ" })).message).toContain("64 lowercase hex")
    expect((await failure({ ...bundle, anchors: [] })).message).toContain("no anchor")
    expect((await failure({ ...bundle, anchors: [{ ...bundle.anchors[0]!, anchoredAt: null }] })).message).toContain("anchoredAt")
    expect((await failure(bundle, "javascript:alert(1)")).reason).toBe("invalid-url")
    expect((await failure(bundle, "not a url")).reason).toBe("invalid-url")
    const pdf = await Effect.runPromise(certificatePdf(bundle, { verifyUrl: VERIFY_URL }))
    expect(pdf.length).toBeGreaterThan(1000)
  })
})

describe("the certificate endpoints", () => {
  let anvil: Anvil
  let env: VerifyEnv
  beforeAll(async () => {
    anvil = await startAnvil()
    env = await startVerifyEnv({ rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey() }, "certificates")
  }, 120_000)
  afterAll(async () => {
    await env?.node.stop()
    await anvil?.stop()
  })

  it("GET /v1/records/{id}/certificate: a PDF of the anchored record whose QR code opens the node's verify page with its bundle", async () => {
    const [record] = await env.anchor([{ data: { invoice: "C-1", total: "99.00" } }])
    const r = await fetch(`${env.node.baseUrl}/v1/records/${record!.recordId}/certificate`, { headers: { authorization: `Bearer ${env.key}` } })
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toBe("application/pdf")
    expect(r.headers.get("cache-control")).toBe("no-store")
    const id = certificateId(record!.bundle)
    expect(id).toMatch(new RegExp(`^CERT-\\d{10}-${record!.bundle.hash.slice(0, 8)}$`))
    expect(r.headers.get("content-disposition")).toBe(`inline; filename="${id}.pdf"`)
    const pdf = new Uint8Array(await r.arrayBuffer())
    const text = (await pdfText(pdf)).join("\n")
    for (const fact of [id, record!.bundle.hash, record!.bundle.anchors[0].txHash, record!.bundle.anchors[0].merkleRoot]) expect(text).toContain(fact)
    // The QR code: the node's own verify page (PUBLIC_URL unset: the listener, http://HOST:PORT), the bundle in the fragment.
    const found = await qrOfPdf(pdf)
    expect(found?.text).toBe(await bundleLink(`${env.node.baseUrl}/verify`, record!.bundle))
    expect(JSON.parse((await decodeBundleFragment(new URL(found!.text).hash))!)).toEqual(record!.bundle)
    // A request naming another host (Host, X-Forwarded-Host/Proto) gets the same document: links never follow the Host header.
    const hostile = await pdfWithHost(`${env.node.baseUrl}/v1/records/${record!.recordId}/certificate`, env.key, "evil.example")
    expect((await qrOfPdf(hostile))?.text).toBe(found?.text)

    // The seed's lookup by hash gives the same document.
    const byHash = await fetch(`${env.node.baseUrl}/v1/certificate/${record!.bundle.hash}`, { headers: { authorization: `Bearer ${env.key}` } })
    expect(Buffer.from(await byHash.arrayBuffer()).equals(Buffer.from(pdf))).toBe(true)
  }, 60_000)

  it("409 NOT_ANCHORED before anchoring, 404 for an unknown hash, 401 without a key; declared in the OpenAPI document as a PDF", async () => {
    // A Fabric record stays QUEUED on this node (no Fabric network).
    const queued = await call(env.node.baseUrl, "POST", "/v1/anchor", { key: env.key, body: { data: { waiting: true }, chain: "fabric" } })
    const r = await call(env.node.baseUrl, "GET", `/v1/records/${queued.json.data.recordId}/certificate`, { key: env.key })
    expect([r.status, r.json.errorCode]).toEqual([409, "NOT_ANCHORED"])
    const byHash = await call(env.node.baseUrl, "GET", `/v1/certificate/${queued.json.data.hash}`, { key: env.key })
    expect([byHash.status, byHash.json.errorCode]).toEqual([409, "NOT_ANCHORED"])
    expect((await call(env.node.baseUrl, "GET", `/v1/certificate/${"0".repeat(64)}`, { key: env.key })).status).toBe(404)
    expect((await call(env.node.baseUrl, "GET", `/v1/certificate/${"0".repeat(64)}`)).json.errorCode).toBe("MISSING_API_KEY")
    const openapi = (await call(env.node.baseUrl, "GET", "/v1/openapi.json")).json
    for (const path of ["/v1/records/{recordId}/certificate", "/v1/certificate/{hash}"]) {
      const get = openapi.paths[path].get
      expect(Object.keys(get.responses["200"].content)).toEqual(["application/pdf"])
      expect(get.responses["409"]).toBeDefined()
    }
    // The console's endpoints are not part of the public document.
    expect(Object.keys(openapi.paths).filter((p) => p.startsWith("/console"))).toEqual([])
  }, 60_000)
})
