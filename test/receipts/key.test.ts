// The receipt key's checks (doctor and start) and the CBOR decoder's refusals.
//   npx vitest run test/receipts/key.test.ts
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { receiptKeyCheck } from "../../src/doctor/doctor.ts"
import { CborError, decode, encode } from "../../src/receipts/cbor.ts"
import { parseReceipt, ReceiptError } from "../../src/receipts/receipt.ts"

const dir = mkdtempSync(join(tmpdir(), "anchord-receipt-key-"))
const write = (name: string, text: string) => {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

describe("receipt key", () => {
  it("doctor: unset is ok (off), a P-256 key ok, another curve / RSA / garbage / missing file fatal", () => {
    expect(receiptKeyCheck(undefined)).toMatchObject({ check: "receipts", status: "ok" })
    const p256 = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    expect(receiptKeyCheck(write("p256.pem", p256))).toMatchObject({ status: "ok", message: expect.stringMatching(/^receipt key ES256, kid [0-9a-f]{16}…$/) })
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    expect(receiptKeyCheck(write("p384.pem", p384))).toMatchObject({ status: "fatal", message: expect.stringContaining("P-256") })
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    expect(receiptKeyCheck(write("rsa.pem", rsa))).toMatchObject({ status: "fatal" })
    expect(receiptKeyCheck(write("junk.pem", "not a key"))).toMatchObject({ status: "fatal", message: "RECEIPT_KEY_FILE: not a PEM private key" })
    expect(receiptKeyCheck(join(dir, "missing.pem"))).toMatchObject({ status: "fatal", message: expect.stringContaining("cannot read") })
  })
})

describe("CBOR and receipt parsing refuse what they do not read", () => {
  it("trailing bytes, truncation, indefinite lengths, floats, duplicate keys, undefined", () => {
    expect(() => decode(new Uint8Array([0x01, 0x02]))).toThrow(CborError)
    expect(() => decode(new Uint8Array([0x58, 0x20, 0x00]))).toThrow(/end of stream/)
    expect(() => decode(new Uint8Array([0x9f, 0xff]))).toThrow(CborError)
    expect(() => decode(new Uint8Array([0xf9, 0x3c, 0x00]))).toThrow(CborError)
    expect(decode(encode(new Map([[1, -7], [395, 1]])))).toEqual(new Map([[1, -7], [395, 1]]))
  })

  it("a COSE_Sign1 with another alg or vds, or an attached payload, is no receipt", () => {
    const prot = (m: Map<number, number>) => encode(m)
    const sign1 = (p: Uint8Array, payload: Uint8Array | null) =>
      encode([p, new Map([[396, new Map([[-1, [encode([1, 0, []])]]])]]), payload, new Uint8Array(64)])
    expect(() => parseReceipt(sign1(prot(new Map([[1, -35], [395, 1]])), null))).toThrow(/ES256/)
    expect(() => parseReceipt(sign1(prot(new Map([[1, -7], [395, 2]])), null))).toThrow(/RFC9162_SHA256/)
    expect(() => parseReceipt(sign1(prot(new Map([[1, -7], [395, 1]])), new Uint8Array(32)))).toThrow(ReceiptError)
    expect(parseReceipt(sign1(prot(new Map([[1, -7], [395, 1]])), null)).inclusion).toEqual({ treeSize: 1, leafIndex: 0, path: [] })
  })
})
