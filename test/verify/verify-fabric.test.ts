// Fabric verification against the gateway dev peer, with an auditor identity of its own: the
// chaincode's lookup(root) and the block's transaction validation code. The anchors are written
// here directly through the gateway (the node's Fabric anchoring is separate work), and the bundle
// is built with the members docs/proof-format.md defines for Fabric anchors.
//   npx vitest run test/verify/verify-fabric.test.ts
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildTree } from "../../src/anchoring/merkle.ts"
import { createDevIdentity, type DevIdentity, type DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { fabricBlockHash, type FabricOptions } from "../../src/verify/fabric.ts"
import { readInput } from "../../src/verify/input.ts"
import type { Report } from "../../src/verify/report.ts"
import { verifyInput } from "../../src/verify/verify.ts"
import { connectGateway, startPeer, take, type Connection } from "../fabric/helpers.ts"
import { clone, jsonFile, runCli } from "./support.ts"

let dir: string
let devPeer: DevPeer
let connection: Connection
let auditor: DevIdentity
const sha = (s: string) => createHash("sha256").update(s).digest("hex")
const data = [{ f: 1 }, { f: 2 }, { f: 3 }]
const hashes = data.map((d) => sha(JSON.stringify(d)))

/** Anchors a batch root through the gateway and returns the bundle of hashes[i]. */
const anchorBatch = async (hs: ReadonlyArray<string>, batchId: string) => {
  const tree = buildTree(hs)
  const contract = connection.gateway.getNetwork(devPeer.channel).getContract(devPeer.chaincode)
  const submitted = await contract.submitAsync("anchor", { arguments: [tree.root, String(hs.length), batchId] })
  const status = await submitted.getStatus()
  const [block] = await take(await connection.gateway.getNetwork(devPeer.channel).getBlockEvents({ startBlock: status.blockNumber }), 1)
  const header = block!.getHeader()!
  const stored = JSON.parse(Buffer.from(await contract.evaluateTransaction("lookup", tree.root)).toString())
  return (i: number) => ({
    version: 1,
    recordId: `fab${i}`.padEnd(24, "0"),
    hash: hs[i],
    hashAlgorithm: "sha256",
    canonicalization: "RFC8785-JCS",
    leafEncoding: "openzeppelin-standard-merkle-tree:bytes32",
    anchors: [{
      chainType: "fabric",
      networkId: "fabric-dev",
      channel: devPeer.channel,
      chaincode: devPeer.chaincode,
      mspId: devPeer.mspId,
      batchId,
      merkleRoot: tree.root,
      merkleProof: tree.proofs[i],
      leafIndex: i,
      leafCount: hs.length,
      txHash: submitted.getTransactionId(),
      blockNumber: Number(status.blockNumber),
      blockHash: fabricBlockHash(BigInt(header.getNumber()), header.getPreviousHash_asU8(), header.getDataHash_asU8()),
      anchoredAt: stored.timestamp
    }]
  })
}

let bundleOf: (i: number) => any
const fabric = (): FabricOptions => ({ endpoint: devPeer.address, mspId: devPeer.mspId, certPath: auditor.certPath, keyPath: auditor.keyPath,
  timeoutMs: 3_000 })
const verify = (doc: unknown, options: FabricOptions = fabric()) => Effect.runPromise(verifyInput(readInput(doc), { rpcFor: () => undefined, fabric: options }))
const failed = (r: Report) => r.checks.filter((c) => c.status === "fail").map((c) => c.id).sort()

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "anchord-verify-fabric-"))
  devPeer = await startPeer({ dataDir: join(dir, "peer"), blockIntervalMs: 200 })
  connection = connectGateway(devPeer)
  // The auditor's own certificate of the channel's MSP (not the node's identity).
  auditor = createDevIdentity(devPeer.mspId, { dir: join(dir, "auditor"), commonName: "auditor" })
  bundleOf = await anchorBatch(hashes, "fab-batch-1")
}, 30_000)
afterAll(async () => {
  connection?.close()
  await devPeer?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe("anchord verify, Fabric anchors on the dev peer", () => {
  it("verifies through the gateway with the auditor's identity (CLI process, exit 0)", async () => {
    const bundle = bundleOf(1)
    const r = await runCli([jsonFile(bundle), "--json", "--fabric-endpoint", devPeer.address, "--fabric-msp-id", devPeer.mspId, "--fabric-cert",
      auditor.certPath!, "--fabric-key", auditor.keyPath!])
    const report = JSON.parse(r.stdout) as Report
    expect(report.checks.filter((c) => c.status !== "pass" && c.id !== "hash")).toEqual([])
    expect(r.code).toBe(0)
    expect(report.checks.find((c) => c.id === "fabric.block")!.message).toContain("is VALID in block")
  }, 30_000)

  it("fails a wrong tx id, a wrong block, a wrong block hash and a root that is not anchored", async () => {
    const wrongTx = clone(bundleOf(0))
    wrongTx.anchors[0].txHash = sha("other tx")
    const t = await verify(wrongTx)
    expect(failed(t)).toEqual(["fabric.block", "fabric.chaincode-lookup"])
    expect(t.checks.find((c) => c.id === "fabric.chaincode-lookup")!.message).toContain("not the stated")

    const wrongBlock = clone(bundleOf(0))
    wrongBlock.anchors[0].blockNumber = 0
    wrongBlock.anchors[0].blockHash = null
    const b = await verify(wrongBlock)
    expect(failed(b)).toEqual(["fabric.block"])
    expect(b.checks.find((c) => c.id === "fabric.block")!.message).toContain("is not in block 0")

    const wrongTime = clone(bundleOf(0))
    wrongTime.anchors[0].anchoredAt = "2020-01-01T00:00:00.000Z"
    expect(failed(await verify(wrongTime))).toEqual(["fabric.chaincode-lookup"])

    const wrongHash = clone(bundleOf(0))
    wrongHash.anchors[0].blockHash = sha("another block")
    expect(failed(await verify(wrongHash))).toEqual(["fabric.block"])

    const wrongRoot = clone(bundleOf(2))
    wrongRoot.anchors[0].merkleRoot = "0x" + sha("not anchored")
    const w = await verify(wrongRoot)
    expect(failed(w)).toEqual(["fabric.chaincode-lookup", "merkle-proof"])
    expect(w.checks.find((c) => c.id === "fabric.chaincode-lookup")!.message).toContain("is not anchored on channel")
  }, 30_000)

  it("fails a transaction the peer marked invalid (validation code), by its code", async () => {
    // Two anchors of the same root endorsed before either commits: the second is MVCC_READ_CONFLICT.
    const hs = [sha("conflict-a"), sha("conflict-b")]
    const tree = buildTree(hs)
    const contract = connection.gateway.getNetwork(devPeer.channel).getContract(devPeer.chaincode)
    const [first, second] = await Promise.all([
      contract.submitAsync("anchor", { arguments: [tree.root, "2", "c1"] }),
      contract.submitAsync("anchor", { arguments: [tree.root, "2", "c2"] })
    ])
    const [s1, s2] = await Promise.all([first.getStatus(), second.getStatus()])
    const [valid, invalid, batch] = s1.successful ? [first, second, "c1"] : [second, first, "c2"]
    expect([s1.successful, s2.successful].sort()).toEqual([false, true])
    const status = s1.successful ? s2 : s1
    const bundle = {
      version: 1,
      hash: hs[0],
      anchors: [{
        chainType: "fabric",
        networkId: "fabric-dev",
        channel: devPeer.channel,
        chaincode: devPeer.chaincode,
        batchId: batch === "c1" ? "c2" : "c1",
        merkleRoot: tree.root,
        merkleProof: tree.proofs[0],
        leafCount: 2,
        txHash: invalid.getTransactionId(),
        blockNumber: Number(status.blockNumber)
      }]
    }
    const r = await verify(bundle)
    expect(failed(r)).toEqual(["fabric.block", "fabric.chaincode-lookup"])
    expect(r.checks.find((c) => c.id === "fabric.block")!.message).toContain("validation code is MVCC_READ_CONFLICT, not VALID")
    expect(r.checks.find((c) => c.id === "fabric.chaincode-lookup")!.message).toContain(`anchored by tx ${valid.getTransactionId()}`)
  }, 30_000)

  it("an unreachable gateway or no identity is exit 2 (could not check)", async () => {
    const down = await runCli([jsonFile(bundleOf(0)), "--fabric-endpoint", "127.0.0.1:1", "--fabric-msp-id", devPeer.mspId, "--fabric-cert", auditor.certPath!,
      "--fabric-key", auditor.keyPath!, "--timeout-ms", "1500"])
    expect(down.stdout).toMatch(/ERROR\s+fabric\.chaincode-lookup\s+gateway 127\.0\.0\.1:1 unreachable/)
    expect(down.code).toBe(2)
    const none = await runCli([jsonFile(bundleOf(0))])
    expect(none.code).toBe(2)
    expect(none.stdout).toContain("no Fabric gateway identity given")
  }, 30_000)
})
