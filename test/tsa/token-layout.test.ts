// The token as `issue` builds it (a layout per shape, its varying TLVs written over: src/tsa/token.ts) is
// byte for byte the reference build (every container encoded by asn1js), for ECDSA and RSA, across
// shapes: imprint algorithms, with and without nonce and certReq, serial sizes, genTime precisions. And
// the quick request reading gives what pkijs' reading gives, or leaves the request to it.
//   npx vitest run test/tsa/token-layout.test.ts
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTsaCertificates } from "../../src/tsa/devCa.ts"
import { loadSigner } from "../../src/tsa/keys.ts"
import { parseRequest, parseWithPkijs, quickRequest } from "../../src/tsa/request.ts"
import { OID } from "../../src/tsa/rfc3161.ts"
import { issue, issueFully, template, type TsaSigner } from "../../src/tsa/token.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-token-layout-"))
// A short arc: asn1js reads a UUID OID's 128-bit arc back as "2.25.{hex}" (see docs/timestamping.md).
const POLICY = "1.3.6.1.4.1.99999.1"
const signers: Record<string, TsaSigner> = {}
const queries: Record<string, Uint8Array> = {}

const openssl = (args: ReadonlyArray<string>) => {
  const r = ChildProcess.spawnSync("openssl", args, { encoding: "utf8" })
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`)
}

beforeAll(async () => {
  for (const kind of ["ecdsa", "rsa"] as const) {
    const loaded = loadSigner(await createTsaCertificates(Path.join(dir, kind), kind), new Date())
    if (!("signer" in loaded)) throw new Error(loaded.problems.join("; "))
    signers[kind] = loaded.signer
  }
  Fs.writeFileSync(Path.join(dir, "data"), "layout\n")
  for (const hash of ["sha256", "sha384", "sha512"]) {
    for (const [name, flags] of [["nonce-cert", ["-cert"]], ["nonce", []], ["cert", ["-cert", "-no_nonce"]], ["bare", ["-no_nonce"]], ["policy", ["-cert",
      "-tspolicy", POLICY]]] as const)
    {
      const out = Path.join(dir, `${hash}-${name}.tsq`)
      openssl(["ts", "-query", "-data", Path.join(dir, "data"), `-${hash}`, ...flags, "-out", out])
      queries[`${hash}-${name}`] = new Uint8Array(Fs.readFileSync(out))
    }
  }
})

afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

/** The signature in a response's SignerInfo (pkijs' reading). */
const signatureOf = (response: Uint8Array) => {
  const resp = new pkijs.TimeStampResp({ schema: asn1js.fromBER(response).result })
  const signed = new pkijs.SignedData({ schema: resp.timeStampToken!.content })
  return new Uint8Array(signed.signerInfos[0]!.signature.valueBlock.valueHexView)
}

describe("token layouts", () => {
  it("issue gives the reference build's bytes, ECDSA and RSA, across shapes", () => {
    const serials = [1n, 128n, 65_535n, 2n ** 53n, 2n ** 63n - 1n]
    const times = [0, 120, 123].map((ms) => new Date(Date.UTC(2026, 10, 26, 14, 30, 7, ms)))
    let compared = 0
    for (const [kind, signer] of Object.entries(signers)) {
      const t = template(signer, POLICY, 1000)
      for (const [name, query] of Object.entries(queries)) {
        const parsed = parseRequest(query, POLICY)
        if (parsed._tag !== "Stamp") throw new Error(`${name}: ${parsed.text}`)
        for (const serial of serials) {
          for (const genTime of times) {
            // Twice: the first builds the shape's layout, the second uses it.
            for (let round = 0; round < 2; round++) {
              const issued = issue(signer, t, parsed.request, { serial, genTime })
              const signature = signatureOf(issued.response)
              const reference = issueFully(signer, t, parsed.request, { serial, genTime }, (data) => {
                // The same signature is valid over the reference's signed attributes: they are the same bytes.
                expect(Crypto.verify("sha256", data, signer.key, signature), `${kind} ${name} ${serial} ${genTime.toISOString()}`).toBe(true)
                return signature
              })
              expect(Buffer.from(issued.response).toString("hex"), `${kind} ${name} ${serial} ${genTime.toISOString()}`).toBe(
                Buffer.from(reference.response).toString("hex")
              )
              expect(Buffer.from(issued.token).equals(reference.token)).toBe(true)
              expect(Buffer.from(issued.tstInfo).equals(reference.tstInfo)).toBe(true)
              compared++
            }
          }
        }
      }
    }
    expect(compared).toBe(2 * 15 * 5 * 3 * 2)
  })
})

describe("the quick request reading", () => {
  const viaPkijs = (der: Uint8Array) => parseWithPkijs(asn1js.fromBER(der).result, POLICY)
  const comparable = (p: ReturnType<typeof parseRequest>) =>
    p._tag === "Refused" ? p : {
      ...p.request,
      nonce: undefined,
      imprint: Buffer.from(p.request.imprint).toString("hex"),
      messageImprintDer: Buffer.from(p.request.messageImprintDer).toString("hex"),
      nonceDer: p.request.nonceDer === undefined ? undefined : Buffer.from(p.request.nonceDer).toString("hex")
    }

  /** A TimeStampReq built with pkijs, varied. */
  const request = (o: {
    version?: number
    hash?: string
    params?: boolean
    length?: number
    policy?: string
    nonce?: number
    certReq?: boolean
    extensions?: boolean
  }) =>
    new Uint8Array(new pkijs.TimeStampReq({
      version: o.version ?? 1,
      messageImprint: new pkijs.MessageImprint({
        hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: o.hash ?? OID.sha256, ...(o.params ? { algorithmParams: new asn1js.Null() } : {}) }),
        hashedMessage: new asn1js.OctetString({ valueHex: Crypto.randomBytes(o.length ?? 32) })
      }),
      ...(o.policy === undefined ? {} : { reqPolicy: o.policy }),
      ...(o.nonce === undefined ? {} : { nonce: new asn1js.Integer({ value: o.nonce }) }),
      ...(o.certReq === undefined ? {} : { certReq: o.certReq }),
      ...(o.extensions ? { extensions: [new pkijs.Extension({ extnID: "1.2.3.4", extnValue: new asn1js.Null().toBER() })] } : {})
    }).toSchema().toBER())

  it("gives pkijs' reading for openssl's queries and for varied requests, refusals included", () => {
    const cases: Array<Uint8Array> = [
      ...Object.values(queries),
      request({}),
      request({ params: true, nonce: 0, certReq: false }),
      request({ hash: OID.sha384, length: 48, nonce: -5, certReq: true }),
      request({ hash: OID.sha512, length: 64, policy: POLICY, nonce: 2 ** 40 }),
      request({ version: 2 }),
      request({ hash: OID.sha1, length: 20 }),
      request({ length: 31 }),
      request({ policy: "1.2.3" }),
      request({ extensions: true }),
      request({ hash: "1.2.3.4.5" })
    ]
    let quick = 0
    for (const der of cases) {
      expect(comparable(parseRequest(der, POLICY))).toEqual(comparable(viaPkijs(der)))
      if (quickRequest(asn1js.fromBER(der).result, POLICY) !== undefined) quick++
    }
    expect(quick).toBe(Object.keys(queries).length + 4)
  })

  it("a request naming the configured policy is granted, also a UUID OID's (asn1js reads its arc in hex)", () => {
    const uuidPolicy = "2.25.254261995566862221233085334779423650513"
    const der = request({ policy: uuidPolicy })
    expect(parseRequest(der, uuidPolicy)._tag).toBe("Stamp")
    expect(parseWithPkijs(asn1js.fromBER(der).result, uuidPolicy)._tag).toBe("Stamp")
    expect(parseRequest(der, "2.25.254261995566862221233085334779423650514")).toMatchObject({ _tag: "Refused", failure: "unacceptedPolicy" })
  })
})
