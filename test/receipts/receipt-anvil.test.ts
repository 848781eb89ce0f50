// COSE Receipts (RFC 9942) of records anchored on anvil, checked by code written here, without anchord's:
// CBOR by cbor2 (a third-party package), the RFC 9162 root recomputed by hand, the ES256 signature by
// node:crypto with the key from /.well-known, and the root against the chain (the LogRootAnchored log of
// the anchoring transaction, and the contract's own verifyLogInclusion). Old batches have no receipt.
//   npx vitest run test/receipts/receipt-anvil.test.ts
import { createHash, createPublicKey, generateKeyPairSync, verify as verifySignature } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { decode, encode, Tag } from "cbor2"
import { createPublicClient, decodeEventLog, http, keccak256, parseAbi, toFunctionSelector, toHex, type Hex } from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { query } from "../support/db.ts"
import { jsonFile, runCli, startVerifyEnv, type Anchored, type VerifyEnv } from "../verify/support.ts"
import { LOG_ROOT_TOPIC, VERIFY_LOG_INCLUSION_SELECTOR } from "../../src/verify/receipt.ts"

// The node's receipt key, as an operator would configure it.
const keyDir = mkdtempSync(join(tmpdir(), "anchord-receipt-"))
const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
writeFileSync(join(keyDir, "receipt.key"), privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 })
process.env.RECEIPT_KEY_FILE = join(keyDir, "receipt.key")

let anvil: Anvil
let env: VerifyEnv
let records: Array<Anchored>

const sha256 = (...parts: Array<Uint8Array>) => new Uint8Array(createHash("sha256").update(Buffer.concat(parts)).digest())

/** RFC 9162 §2.1.3.2, written out again for this test. */
const rootFrom = (index: number, size: number, leaf: Uint8Array, path: Array<Uint8Array>): Uint8Array | undefined => {
  if (index >= size) return undefined
  let fn = index
  let sn = size - 1
  let r = sha256(new Uint8Array([0]), leaf)
  for (const p of path) {
    if (sn === 0) return undefined
    if (fn % 2 === 1 || fn === sn) {
      r = sha256(new Uint8Array([1]), p, r)
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2)
        sn = Math.floor(sn / 2)
      }
    } else {
      r = sha256(new Uint8Array([1]), r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 ? r : undefined
}

interface Checked {
  readonly valid: boolean
  readonly root: Uint8Array | undefined
  readonly size: number
  readonly index: number
  readonly path: Array<Uint8Array>
  readonly anchor: Record<string, unknown>
}

/** An independent receipt check: cbor2 + node:crypto, nothing from src/. */
const checkReceipt = (bytes: Uint8Array, recordHashHex: string, pem: string): Checked => {
  const top = decode(bytes) as Tag
  expect(top).toBeInstanceOf(Tag)
  expect(top.tag).toBe(18)
  const [protectedBytes, unprotected, payload, signature] = top.contents as [Uint8Array, Map<unknown, unknown>, null, Uint8Array]
  const prot = decode(protectedBytes) as Map<number, unknown>
  expect(prot.get(1)).toBe(-7) // ES256
  expect(prot.get(395)).toBe(1) // vds: RFC9162_SHA256
  expect(payload).toBeNull() // detached
  const vdp = unprotected.get(396) as Map<number, Array<Uint8Array>>
  const proofs = vdp.get(-1)!
  expect(proofs.length).toBe(1)
  const [size, index, path] = decode(proofs[0]!) as [number, number, Array<Uint8Array>]
  const root = rootFrom(index, size, new Uint8Array(Buffer.from(recordHashHex, "hex")), path)
  const toBeSigned = encode(["Signature1", protectedBytes, new Uint8Array(0), root ?? new Uint8Array(32)])
  const valid = root !== undefined &&
    verifySignature("sha256", toBeSigned, { key: createPublicKey(pem), dsaEncoding: "ieee-p1363" }, signature)
  return { valid, root, size, index, path, anchor: unprotected.get("anchord-anchor") as Record<string, unknown> }
}

const get = (path: string, key?: string) => fetch(`${env.node.baseUrl}${path}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } })

beforeAll(async () => {
  anvil = await startAnvil()
  env = await startVerifyEnv({ rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey() }, "receipts")
  records = await env.anchor([1, 2, 3, 4, 5].map((n) => ({ data: { receipt: n } })))
}, 90_000)
afterAll(async () => {
  await env?.node.stop()
  await anvil?.stop()
})

describe("COSE receipts on anvil", () => {
  it("every record's receipt verifies independently: CBOR, RFC 9162 proof, ES256 signature, root on chain", async () => {
    const pemRes = await get("/.well-known/anchord-receipt-key.pem")
    expect(pemRes.status).toBe(200)
    const pem = await pemRes.text()
    expect(createPublicKey(pem).export({ format: "der", type: "spki" }))
      .toEqual(createPublicKey(privateKey).export({ format: "der", type: "spki" }))
    // The COSE_KeySet holds the same key (x, y) and its kid.
    const keys = decode(new Uint8Array(await (await get("/.well-known/scitt-keys")).arrayBuffer())) as Array<Map<number, unknown>>
    const jwk = createPublicKey(pem).export({ format: "jwk" })
    expect(Buffer.from(keys[0]!.get(-2) as Uint8Array).toString("base64url")).toBe(jwk.x)
    expect(Buffer.from(keys[0]!.get(-3) as Uint8Array).toString("base64url")).toBe(jwk.y)

    const client = createPublicClient({ transport: http(env.rpcUrl) })
    const events = parseAbi(["event LogRootAnchored(uint64 indexed batchId, bytes32 indexed logRoot)"])
    // Batch (OpenZeppelin root) → its RFC 9162 root: one tree per batch (a loaded machine may cut the five in two).
    const roots = new Map<string, string>()
    for (const r of records) {
      const res = await get(`/v1/records/${r.recordId}/receipt`, env.key)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toContain("application/cose")
      const bytes = new Uint8Array(await res.arrayBuffer())
      const c = checkReceipt(bytes, r.bundle.hash, pem)
      expect(c.valid, r.recordId).toBe(true)
      expect(c.size).toBe(r.bundle.anchors[0].leafCount)
      const rootHex = `0x${Buffer.from(c.root!).toString("hex")}`
      expect(roots.get(r.bundle.anchors[0].merkleRoot) ?? rootHex).toBe(rootHex)
      roots.set(r.bundle.anchors[0].merkleRoot, rootHex)
      expect(c.anchor["logRoot"]).toBe(rootHex)
      expect(c.anchor["txHash"]).toBe(r.bundle.anchors[0].txHash)
      expect(c.anchor["merkleRoot"]).toBe(r.bundle.anchors[0].merkleRoot)

      // The root against the chain: the anchoring transaction's LogRootAnchored log from the contract.
      const receipt = await client.getTransactionReceipt({ hash: c.anchor["txHash"] as Hex })
      expect(receipt.blockNumber).toBe(BigInt(c.anchor["blockNumber"] as number))
      const logged = receipt.logs.filter((l) => l.address.toLowerCase() === env.contract.toLowerCase()).flatMap((l) => {
        try {
          return [decodeEventLog({ abi: events, data: l.data, topics: l.topics })]
        } catch {
          return []
        }
      })
      expect(logged.map((e) => e.args.logRoot)).toEqual([rootHex])
      // And the contract's own RFC 9162 check (SHA-256 precompile).
      const onChain = await client.readContract({
        address: env.contract as Hex,
        abi: parseAbi(["function verifyLogInclusion(bytes32, uint256, uint256, bytes32[], bytes32) pure returns (bool)"]),
        functionName: "verifyLogInclusion",
        args: [`0x${r.bundle.hash}`, BigInt(c.index), BigInt(c.size), c.path.map((p) => `0x${Buffer.from(p).toString("hex")}` as Hex), rootHex as Hex]
      })
      expect(onChain).toBe(true)
    }
  }, 60_000)

  it("a receipt does not verify for another record hash, a changed proof or another key", async () => {
    const pem = await (await get("/.well-known/anchord-receipt-key.pem")).text()
    const [a, b] = records
    const bytes = new Uint8Array(await (await get(`/v1/records/${a!.recordId}/receipt`, env.key)).arrayBuffer())
    expect(checkReceipt(bytes, a!.bundle.hash, pem).valid).toBe(true)
    expect(checkReceipt(bytes, b!.bundle.hash, pem).valid).toBe(false)
    const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }).toString()
    expect(checkReceipt(bytes, a!.bundle.hash, other).valid).toBe(false)
    // One byte of the signature flipped.
    const tampered = bytes.slice()
    tampered[tampered.length - 1]! ^= 1
    expect(checkReceipt(tampered, a!.bundle.hash, pem).valid).toBe(false)
  })

  it("a record of a batch anchored without an RFC 9162 tree has no receipt (404), and its proof bundle still serves", async () => {
    const [old] = await env.anchor([{ data: { receipt: "old" } }])
    // As a batch cut before migration 0022 reads.
    await query(env.node.databaseUrl, "UPDATE anchor_batches SET log_root = NULL WHERE id = (SELECT batch_id FROM anchors WHERE record_id = $1)", [
      old!.recordId
    ])
    const res = await get(`/v1/records/${old!.recordId}/receipt`, env.key)
    expect(res.status).toBe(404)
    const body = await res.json() as { errorCode: string; error: string }
    expect(body.errorCode).toBe("NOT_FOUND")
    expect(body.error).toContain("no COSE receipt")
    expect((await get(`/v1/records/${old!.recordId}/proof`, env.key)).status).toBe(200)
    expect((await get(`/v1/records/nonexistent0000000000000/receipt`, env.key)).status).toBe(400)
  }, 60_000)

  it("anchord verify --receipt: verified with the data and the chain; not verified for other data or another key", async () => {
    expect(LOG_ROOT_TOPIC).toBe(keccak256(toHex("LogRootAnchored(uint64,bytes32)")))
    expect(VERIFY_LOG_INCLUSION_SELECTOR).toBe(toFunctionSelector("verifyLogInclusion(bytes32,uint256,uint256,bytes32[],bytes32)"))
    const [a] = records
    const receiptFile = join(keyDir, "a.cose")
    writeFileSync(receiptFile, new Uint8Array(await (await get(`/v1/records/${a!.recordId}/receipt`, env.key)).arrayBuffer()))
    const keyFile = join(keyDir, "key.pem")
    writeFileSync(keyFile, await (await get("/.well-known/anchord-receipt-key.pem")).text())
    const good = await runCli(["--receipt", receiptFile, "--receipt-key", keyFile, "--data", jsonFile(a!.data), "--rpc", env.rpcUrl, "--json"])
    const report = JSON.parse(good.stdout) as { outcome: string; checks: Array<{ id: string; status: string }> }
    expect(report.outcome, good.stdout).toBe("verified")
    expect(good.code).toBe(0)
    expect(report.checks.map((c) => `${c.id}:${c.status}`)).toEqual([
      "receipt.format:pass",
      "receipt.inclusion:pass",
      "receipt.signature:pass",
      "evm.chain-id:pass",
      "evm.log-root:pass",
      "evm.block:pass",
      "evm.confirmations:pass",
      "evm.contract-log-inclusion:pass"
    ])
    const otherData = await runCli(["--receipt", receiptFile, "--receipt-key", keyFile, "--data", jsonFile({ receipt: 99 }), "--rpc", env.rpcUrl])
    expect(otherData.code).toBe(1)
    expect(otherData.stdout).toContain("NOT VERIFIED")
    const otherKeyFile = join(keyDir, "other.pem")
    writeFileSync(otherKeyFile, generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }))
    const otherKey = await runCli(["--receipt", receiptFile, "--receipt-key", otherKeyFile, "--data", jsonFile(a!.data), "--rpc", env.rpcUrl, "--json"])
    expect(otherKey.code).toBe(1)
    expect((JSON.parse(otherKey.stdout) as { checks: Array<{ id: string; status: string }> }).checks.find((c) => c.id === "receipt.signature")?.status).toBe(
      "fail"
    )
  }, 60_000)
})
