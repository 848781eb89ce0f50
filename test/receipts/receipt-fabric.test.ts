// COSE receipts of records anchored on Fabric (the dev peer) and of a hybrid record (Fabric + anvil):
// `anchord verify --receipt` as a process, with an auditor's own Fabric identity, checks the ledger's record
// of the batch holds the signed root (lookup(merkleRoot).logRoot) and the block; `?networkId=` picks the
// anchor of a hybrid record.
//   npx vitest run test/receipts/receipt-fabric.test.ts
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DevIdentity, DevPeer } from "../../src/dev/fabric-peer/index.ts"
import type { Report } from "../../src/verify/report.ts"
import type { Anvil } from "../evm/anvil.ts"
import { type FabricTestNode, startFabricEvmFixture } from "../fabric-anchoring/support.ts"
import { jsonFile, runCli } from "../verify/support.ts"

const keyDir = mkdtempSync(join(tmpdir(), "anchord-receipt-fabric-"))
writeFileSync(join(keyDir, "receipt.key"), generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }), {
  mode: 0o600
})
process.env.RECEIPT_KEY_FILE = join(keyDir, "receipt.key")

let fixture: Awaited<ReturnType<typeof startFabricEvmFixture>> | undefined
let peer: DevPeer & { readonly dir: string }
let anvil: Anvil
let node: FabricTestNode
let key: string
let auditor: DevIdentity
let ids: ReadonlyArray<string> = []

beforeAll(async () => {
  fixture = await startFabricEvmFixture({
    evmNetworkId: "anvil-receipts",
    bodies: [{ data: { fr: 1 }, chain: "fabric" }, { data: { fr: 2 }, chain: "fabric" }, { data: { hr: 1 }, chain: "hybrid" }],
    anchoredWithinMs: 30_000
  })
  ;({ peer, anvil, node, key, auditor, ids } = fixture)
}, 90_000)
afterAll(() => fixture?.stop())

const fetchTo = async (path: string, file: string) => {
  const res = await fetch(`${node.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } })
  expect(res.status, path).toBe(200)
  writeFileSync(join(keyDir, file), new Uint8Array(await res.arrayBuffer()))
  return join(keyDir, file)
}

describe("COSE receipts of Fabric anchors", () => {
  it("a Fabric record's receipt verifies with the auditor's identity (ledger logRoot and block); other data does not", async () => {
    const keyFile = await fetchTo("/.well-known/anchord-receipt-key.pem", "key.pem")
    const receipt = await fetchTo(`/v1/records/${ids[0]}/receipt`, "f1.cose")
    const fabricFlags = ["--fabric-endpoint", peer.address, "--fabric-msp-id", peer.mspId, "--fabric-cert", auditor.certPath!, "--fabric-key", auditor.keyPath!]
    const ok = await runCli(["--receipt", receipt, "--receipt-key", keyFile, "--data", jsonFile({ fr: 1 }), "--json", ...fabricFlags])
    const report = JSON.parse(ok.stdout) as Report
    expect(report.checks.map((c) => `${c.id}:${c.status}`)).toEqual([
      "receipt.format:pass",
      "receipt.inclusion:pass",
      "receipt.signature:pass",
      "fabric.chaincode-lookup:pass",
      "fabric.log-root:pass",
      "fabric.block:pass"
    ])
    expect(ok.code).toBe(0)
    const bad = await runCli(["--receipt", receipt, "--receipt-key", keyFile, "--data", jsonFile({ fr: 2 }), ...fabricFlags])
    expect(bad.code).toBe(1)
    // Without an identity: the receipt's own checks pass, the ledger cannot be asked (exit 2).
    const noIdentity = await runCli(["--receipt", receipt, "--receipt-key", keyFile, "--data", jsonFile({ fr: 1 })])
    expect(noIdentity.code).toBe(2)
  }, 60_000)

  it("a hybrid record has a receipt per network: EVM by default, Fabric with ?networkId=", async () => {
    const keyFile = join(keyDir, "key.pem")
    const evm = await fetchTo(`/v1/records/${ids[2]}/receipt`, "h-evm.cose")
    const evmRun = await runCli(["--receipt", evm, "--receipt-key", keyFile, "--data", jsonFile({ hr: 1 }), "--rpc", anvil.rpcUrl, "--json"])
    expect((JSON.parse(evmRun.stdout) as Report).anchors.map((a) => a.networkId)).toEqual(["anvil-receipts"])
    expect(evmRun.code).toBe(0)
    const fabric = await fetchTo(`/v1/records/${ids[2]}/receipt?networkId=fabric-dev`, "h-fabric.cose")
    const fabricRun = await runCli(["--receipt", fabric, "--receipt-key", keyFile, "--data", jsonFile({ hr: 1 }), "--json", "--fabric-endpoint", peer.address,
      "--fabric-msp-id", peer.mspId, "--fabric-cert", auditor.certPath!, "--fabric-key", auditor.keyPath!])
    expect((JSON.parse(fabricRun.stdout) as Report).anchors.map((a) => a.networkId)).toEqual(["fabric-dev"])
    expect(fabricRun.code).toBe(0)
    const none = await fetch(`${node.baseUrl}/v1/records/${ids[2]}/receipt?networkId=elsewhere`, { headers: { authorization: `Bearer ${key}` } })
    expect(none.status).toBe(404)
  }, 60_000)
})
