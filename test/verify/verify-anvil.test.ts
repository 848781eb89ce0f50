// `anchord verify` against anvil: good bundles, IN_PLACE documents and record lookups verify (CLI
// as a real process); every kind of tampering fails with the right reason; a reorganisation after
// the bundle was taken fails it; an unreachable RPC is exit 2, never "not verified".
//   npx vitest run test/verify/verify-anvil.test.ts
import { createHash, randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rpcClient } from "../../src/verify/evm.ts"
import { readInput } from "../../src/verify/input.ts"
import type { Report } from "../../src/verify/report.ts"
import { verifyInput } from "../../src/verify/verify.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { call, deploy } from "../evm/support.ts"
import { validate } from "./jsonSchema.ts"
import { clone, jsonFile, root, runCli, startVerifyEnv, type Anchored, type VerifyEnv } from "./support.ts"

let anvil: Anvil
let env: VerifyEnv
let records: Array<Anchored>

const verify = (doc: unknown, rpcUrl = env.rpcUrl) => Effect.runPromise(verifyInput(readInput(doc), { rpcFor: () => rpcClient(rpcUrl, 5_000) }))
const failed = (r: Report) => r.checks.filter((c) => c.status === "fail").map((c) => c.id).sort()
const hex32 = () => "0x" + randomBytes(32).toString("hex")

beforeAll(async () => {
  anvil = await startAnvil()
  env = await startVerifyEnv({ rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey() }, "anvil")
  records = await env.anchor([
    { data: { invoice: 1, amount: "10.00" } },
    { data: { invoice: 2, amount: "20.00", nested: { é: [1, 2, { z: null }] } }, packageMode: "IN_PLACE" },
    { data: { invoice: 3 } },
    { data: { invoice: 4 } }
  ])
}, 60_000)
afterAll(async () => {
  await env?.node.stop()
  await anvil?.stop()
})

describe("anchord verify on anvil", () => {
  it("verifies a bundle, an IN_PLACE document and a record lookup (CLI process, exit 0)", async () => {
    const [plain, inPlace] = records
    expect(plain!.bundle.anchors[0].chainId).toBe(env.chainId)

    const bundle = await runCli([jsonFile(plain!.bundle), "--rpc", env.rpcUrl, "--data", jsonFile(plain!.data)])
    expect(bundle.stdout).toContain("VERIFIED")
    expect(bundle.code).toBe(0)

    // IN_PLACE: the lookup's data carries the bundle as _anchor; the data alone is a self-verifying document.
    const doc = inPlace!.lookup.data.data
    expect(doc._anchor.version).toBe(1)
    expect(doc._anchor.recordId).toBe(inPlace!.recordId)
    const inPlaceRun = await runCli([jsonFile(doc), "--rpc", env.rpcUrl, "--json"])
    const report = JSON.parse(inPlaceRun.stdout) as Report
    expect(inPlaceRun.code).toBe(0)
    expect(report.outcome).toBe("verified")
    expect(report.input).toBe("in-place")
    expect(report.hashSource).toBe("data")
    for (const id of ["hash", "merkle-proof", "evm.chain-id", "evm.contract-code", "evm.contract-verify", "evm.contract-anchor", "evm.transaction", "evm.block",
      "evm.confirmations"])
    {
      expect(report.checks.find((c) => c.id === id)?.status, id).toBe("pass")
    }

    // The bundles the node serves match the published JSON Schema; a broken one does not.
    const schema = JSON.parse(readFileSync(`${root}/docs/proof-bundle.schema.json`, "utf8"))
    expect(validate(schema, plain!.bundle)).toEqual([])
    expect(validate(schema, doc._anchor)).toEqual([])
    const broken = clone(plain!.bundle)
    broken.anchors[0].merkleProof = ["0x12"]
    delete broken.anchors[0].contractAddress
    expect(validate(schema, broken)).toEqual(["$.anchors[0].merkleProof[0]: \"0x12\" does not match ^0x[0-9a-f]{64}$",
      "$.anchors[0].contractAddress: required"])

    // A record lookup response (MANAGED: data hashed, anchors without a block hash).
    const lookup = await verify(plain!.lookup)
    expect(lookup.input).toBe("record")
    expect(lookup.hashSource).toBe("data")
    expect(lookup.outcome).toBe("verified")
  }, 30_000)

  it("fails changed data, a changed hash, a changed proof element and a wrong root, each with its reason", async () => {
    const [plain, inPlace] = records

    const doc = clone(inPlace!.lookup.data.data)
    doc.amount = "21.00"
    const changedData = await verify(doc)
    expect(changedData.outcome).toBe("not-verified")
    expect(changedData.exitCode).toBe(1)
    expect(failed(changedData)).toEqual(["evm.contract-verify", "hash", "merkle-proof"])
    expect(changedData.checks.find((c) => c.id === "hash")!.message).toContain("the data is not what was anchored")

    const changedHash = clone(plain!.bundle)
    changedHash.hash = createHash("sha256").update("something else").digest("hex")
    expect(failed(await verify(changedHash))).toEqual(["evm.contract-verify", "merkle-proof"])

    const changedProof = clone(plain!.bundle)
    const proof = changedProof.anchors[0].merkleProof as Array<string>
    expect(proof.length).toBeGreaterThan(0) // four records in one batch
    proof[0] = hex32()
    expect(failed(await verify(changedProof))).toEqual(["evm.contract-verify", "merkle-proof"])

    const wrongRoot = clone(plain!.bundle)
    wrongRoot.anchors[0].merkleRoot = hex32()
    const r = await verify(wrongRoot)
    expect(failed(r)).toEqual(["evm.contract-anchor", "evm.contract-verify", "evm.transaction", "merkle-proof"])
    expect(r.checks.find((c) => c.id === "evm.contract-anchor")!.message).toContain("is not anchored in contract")
  }, 30_000)

  it("fails a wrong contract, a wrong chain id and a transaction that does not exist", async () => {
    const [plain] = records
    // Another AnchorRegistry on the same chain: a real contract that never anchored this root.
    const other = await deploy(env.rpcUrl, env.privateKey)
    const wrongContract = clone(plain!.bundle)
    wrongContract.anchors[0].contractAddress = other.address
    const r = await verify(wrongContract)
    expect(failed(r)).toEqual(["evm.contract-anchor", "evm.contract-verify", "evm.transaction"])
    expect(r.checks.find((c) => c.id === "evm.transaction")!.message).toContain(`no Anchored(batchId`)

    const noContract = clone(plain!.bundle)
    noContract.anchors[0].contractAddress = "0x" + "11".repeat(20)
    expect(failed(await verify(noContract))).toContain("evm.contract-code")

    const wrongChain = clone(plain!.bundle)
    wrongChain.anchors[0].chainId = 1
    const c = await verify(wrongChain)
    expect(failed(c)).toEqual(["evm.chain-id"])
    expect(c.checks.find((x) => x.id === "evm.chain-id")!.message).toContain("the RPC serves chain 31337, the anchor states chain 1")

    const wrongTime = clone(plain!.bundle)
    wrongTime.anchors[0].anchoredAt = "2020-01-01T00:00:00.000Z"
    const w = await verify(wrongTime)
    expect(failed(w)).toEqual(["evm.contract-anchor"])
    expect(w.checks.find((x) => x.id === "evm.contract-anchor")!.message).toContain("not the stated 2020-01-01T00:00:00.000Z")

    const noTx = clone(plain!.bundle)
    noTx.anchors[0].txHash = hex32()
    const t = await verify(noTx)
    expect(failed(t)).toEqual(["evm.transaction"])
    expect(t.checks.find((x) => x.id === "evm.transaction")!.message).toContain("not found on chain 31337")

    // Same facts through the CLI: exit 1 with the reason printed.
    const cli = await runCli([jsonFile(noTx), "--rpc", env.rpcUrl])
    expect(cli.code).toBe(1)
    expect(cli.stdout).toMatch(/FAIL\s+evm\.transaction\s+transaction 0x[0-9a-f]{64} not found/)
    expect(cli.stdout).toContain("NOT VERIFIED (exit 1)")
  }, 30_000)

  it("an unreachable RPC is exit 2 (could not check), not 'not verified'", async () => {
    const [plain] = records
    // A port nothing listens on (connection refused), then fetch's own refusal of port 1.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const port = (server.address() as { port: number }).port
        server.close(() => resolve(port))
      })
    })
    const cli = await runCli([jsonFile(plain!.bundle), "--rpc", `http://127.0.0.1:${closed}`, "--json", "--timeout-ms", "2000"])
    expect(cli.code).toBe(2)
    const report = JSON.parse(cli.stdout) as Report
    expect(report.outcome).toBe("could-not-check")
    expect(report.checks.find((c) => c.id === "evm.chain-id")!.status).toBe("error")
    expect(report.checks.find((c) => c.id === "evm.chain-id")!.message).toContain("unreachable")
    expect(report.checks.find((c) => c.id === "evm.chain-id")!.message).toContain("ECONNREFUSED")
    expect((await runCli([jsonFile(plain!.bundle), "--rpc", "http://127.0.0.1:1"])).code).toBe(2)
    // No --rpc at all: could not check either.
    expect((await runCli([jsonFile(plain!.bundle)])).code).toBe(2)
    // Unreadable input: 2.
    expect((await runCli([jsonFile("{not json"), "--rpc", env.rpcUrl])).code).toBe(2)
  }, 30_000)

  it("POST /v1/verify: data, hash or a bundle, checked by the node against its configured chain", async () => {
    const [plain, inPlace] = records
    const post = (body: unknown) => call(env.node.baseUrl, "POST", "/v1/verify", { key: env.key, body })

    const byData = await post({ data: plain!.data })
    expect(byData.status).toBe(200)
    expect(byData.json.data.outcome).toBe("verified")
    expect(byData.json.data.verified).toBe(true)
    expect(byData.json.data.bundleSource).toBe("records")
    expect(byData.json.data.results[0].recordId).toBe(plain!.recordId)
    expect(byData.json.data.results[0].checks.find((c: any) => c.id === "evm.contract-verify").status).toBe("pass")

    const byHash = await post({ hash: plain!.bundle.hash })
    expect(byHash.json.data.verified).toBe(true)
    expect(byHash.json.data.hashSource).toBe("hash")

    const unknown = await post({ data: { invoice: 999 } })
    expect(unknown.status).toBe(200)
    expect(unknown.json.data.verified).toBe(false)
    expect(unknown.json.data.results[0].checks[0].id).toBe("records")

    // With a bundle (here an IN_PLACE document): the client's data against it.
    const doc = inPlace!.lookup.data.data
    const good = await post({ data: inPlace!.data, bundle: doc._anchor })
    expect(good.json.data.outcome).toBe("verified")
    expect(good.json.data.bundleSource).toBe("request")
    const bad = await post({ data: { ...inPlace!.data, amount: "0" }, bundle: doc })
    expect(bad.json.data.outcome).toBe("not-verified")
    expect(bad.json.data.results[0].checks.find((c: any) => c.id === "hash").status).toBe("fail")

    // `_anchor` is reserved in IN_PLACE data.
    const reserved = await call(env.node.baseUrl, "POST", "/v1/anchor", { key: env.key, body: { data: { _anchor: 1 }, packageMode: "IN_PLACE" } })
    expect(reserved.status).toBe(400)
    expect(reserved.json.error).toContain("data._anchor: reserved in IN_PLACE mode")

    const missing = await post({})
    expect(missing.status).toBe(400)
    expect(missing.json.errorCode).toBe("VALIDATION_ERROR")
  }, 30_000)

  it("fails a bundle whose block was reorganised away after it was taken", async () => {
    // Snapshot, anchor one more record, take its bundle, stop the node, revert and mine other blocks.
    const snapshot = await anvil.rpc("evm_snapshot")
    const [late] = await env.anchor([{ data: { late: true } }])
    const before = await verify(late!.bundle)
    expect(before.outcome).toBe("verified")
    await env.node.stop()
    await anvil.rpc("evm_revert", [snapshot])
    await anvil.rpc("anvil_mine", ["0x5"])
    const after = await verify(late!.bundle)
    expect(after.outcome).toBe("not-verified")
    expect(failed(after)).toEqual(["evm.block", "evm.contract-anchor", "evm.contract-verify", "evm.transaction"])
    expect(after.checks.find((c) => c.id === "evm.block")!.message).toContain("reorganised away")
  }, 30_000)
})
