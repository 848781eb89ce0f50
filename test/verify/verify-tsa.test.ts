// `anchord verify --tsr` (docs/verifying.md): a token from a real node (openssl's query), its record
// anchored on anvil, verified as a real CLI process with the bundle from a file and from the node;
// a wrong CA, tampered data, a tampered token and another record's bundle each fail with their reason.
//   npx vitest run test/verify/verify-tsa.test.ts
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DevTsaFiles } from "../../src/tsa/devCa.ts"
import { loadSigner } from "../../src/tsa/keys.ts"
import { parseRequest } from "../../src/tsa/request.ts"
import { essAttribute, issue, template } from "../../src/tsa/token.ts"
import type { Report } from "../../src/verify/report.ts"
import { checkToken, readCaPems } from "../../src/verify/timestamp.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { allAnchored, call, waitFor } from "../evm/support.ts"
import { type DevTsa, useDevTsa } from "../tsa/support.ts"
import { jsonFile, runCli, startVerifyEnv, type VerifyEnv } from "./support.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-verify-tsa-"))
const file = (name: string) => Path.join(dir, name)

let anvil: Anvil
let env: VerifyEnv
let ca: DevTsaFiles
let otherCa: DevTsaFiles
let tsa: DevTsa | undefined
/** Per imprint algorithm: the .tsr file and GET /v1/timestamp/{serial}'s answer once ANCHORED. */
const tokens: Record<string, { tsr: string; view: any }> = {}

const statusOf = (r: Report, id: string) => r.checks.find((c) => c.id === id)
const failed = (r: Report) => r.checks.filter((c) => c.status === "fail").map((c) => c.id).sort()

beforeAll(async () => {
  tsa = await useDevTsa(dir)
  ca = tsa.files
  otherCa = tsa.otherCa
  anvil = await startAnvil()
  env = await startVerifyEnv({ rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey() }, "tsa")
  Fs.writeFileSync(file("data.txt"), "the contract, signed\n")
  const recordIds: Array<string> = []
  for (const hash of ["sha256", "sha512"]) {
    const q = ChildProcess.spawnSync("openssl", ["ts", "-query", "-data", file("data.txt"), `-${hash}`, "-cert", "-out", file(`${hash}.tsq`)])
    expect(q.status).toBe(0)
    const r = await fetch(`${env.node.baseUrl}/v1/timestamp`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.key}`, "content-type": "application/timestamp-query" },
      body: Fs.readFileSync(file(`${hash}.tsq`))
    })
    expect(r.status).toBe(200)
    Fs.writeFileSync(file(`${hash}.tsr`), new Uint8Array(await r.arrayBuffer()))
    const serial = r.headers.get("x-timestamp-serial")!
    tokens[hash] = { tsr: file(`${hash}.tsr`), view: { serial } }
    recordIds.push((await call(env.node.baseUrl, "GET", `/v1/timestamp/${serial}`, { key: env.key })).json.data.recordId)
  }
  await waitFor("the tokens' records ANCHORED", allAnchored(env.node.databaseUrl, recordIds), 30_000)
  for (const t of Object.values(tokens)) t.view = (await call(env.node.baseUrl, "GET", `/v1/timestamp/${t.view.serial}`, { key: env.key })).json
}, 90_000)
afterAll(async () => {
  await env?.node.stop()
  await anvil?.stop()
  tsa?.restore()
  Fs.rmSync(dir, { recursive: true, force: true })
})

const verifyTsr = (tsr: string, extra: ReadonlyArray<string>, options: { data?: string; ca?: string } = {}) =>
  runCli(["--tsr", tsr, "--data", options.data ?? file("data.txt"), "--ca", options.ca ?? ca.caFile, "--rpc", env.rpcUrl, ...extra])

describe("anchord verify --tsr", () => {
  it("verifies a token and its anchor: the bundle from GET /v1/timestamp/{serial}'s file, and fetched with --node", async () => {
    const run = await verifyTsr(tokens.sha256!.tsr, [jsonFile(tokens.sha256!.view)])
    expect(run.stdout).toContain(`time-stamp token serial ${tokens.sha256!.view.data.serial}`)
    expect(run.stdout).toContain("policy 2.25.254261995566862221233085334779423650513,")
    for (const id of ["tsa.format", "tsa.signature", "tsa.chain", "tsa.ess", "tsa.eku", "tsa.imprint", "tsa.record-hash", "merkle-proof",
      "evm.contract-verify"])
    {
      expect(run.stdout).toMatch(new RegExp(`PASS +${id.replace(".", "\\.")} `))
    }
    expect(run.stdout).toContain("VERIFIED (exit 0)")
    expect(run.code).toBe(0)

    // SHA-512: the record hash is SHA-256 of the TSTInfo; the bundle fetched from the node.
    const fetched = await verifyTsr(tokens.sha512!.tsr, ["--node", env.node.baseUrl, "--api-key", env.key, "--json"])
    const report = JSON.parse(fetched.stdout) as Report
    expect(report.outcome).toBe("verified")
    expect(report.timestamp).toMatchObject({ hashAlgorithm: "sha512", serial: tokens.sha512!.view.data.serial })
    expect(statusOf(report, "tsa.record-hash")!.message).toContain("SHA-256 of the token's TSTInfo")
    expect(report.hash).toBe(tokens.sha512!.view.data.recordHash)
    expect(fetched.code).toBe(0)
  }, 60_000)

  it("a wrong CA, tampered data, a tampered token and another record's bundle each fail (exit 1) with their reason", async () => {
    const view = jsonFile(tokens.sha256!.view)
    const wrongCa = JSON.parse((await verifyTsr(tokens.sha256!.tsr, [view, "--json"], { ca: otherCa.caFile })).stdout) as Report
    expect(wrongCa.exitCode).toBe(1)
    expect(failed(wrongCa)).toEqual(["tsa.chain"])
    expect(statusOf(wrongCa, "tsa.chain")!.message).toContain("does not chain to the given CA")

    Fs.writeFileSync(file("tampered.txt"), "the contract, signed!\n")
    const tamperedData = await verifyTsr(tokens.sha256!.tsr, [view], { data: file("tampered.txt") })
    expect(tamperedData.code).toBe(1)
    expect(tamperedData.stdout).toMatch(/FAIL +tsa\.imprint .*the data is not what was time-stamped/)
    expect(tamperedData.stdout).toMatch(/PASS +tsa\.signature /)
    expect(tamperedData.stdout).toContain("NOT VERIFIED (exit 1)")

    // One byte of the signed TSTInfo changed (the genTime's year digit): the signature no longer holds.
    const tsr = Fs.readFileSync(tokens.sha256!.tsr)
    const at = tsr.indexOf(Buffer.from(new Date(tokens.sha256!.view.data.genTime).getUTCFullYear().toString()))
    expect(at).toBeGreaterThan(0)
    tsr[at + 3] = tsr[at + 3]! === 0x39 ? 0x38 : tsr[at + 3]! + 1
    Fs.writeFileSync(file("tampered.tsr"), tsr)
    const tamperedToken = JSON.parse((await verifyTsr(file("tampered.tsr"), [view, "--json"])).stdout) as Report
    expect(tamperedToken.exitCode).toBe(1)
    expect(failed(tamperedToken)).toContain("tsa.signature")
    expect(statusOf(tamperedToken, "tsa.signature")!.message).toContain("the token was changed")

    // The SHA-512 token's anchored bundle is another record's: tied to the token by nothing.
    const otherBundle = await verifyTsr(tokens.sha256!.tsr, [jsonFile(tokens.sha512!.view.data.proof), "--json"])
    const other = JSON.parse(otherBundle.stdout) as Report
    expect(failed(other)).toEqual(["tsa.record-hash"])
    expect(statusOf(other, "tsa.record-hash")!.message).toContain("the bundle anchors another record")
    expect(otherBundle.code).toBe(1)

    // No bundle and no --node: the token checks, the anchor cannot be checked (exit 2).
    const noAnchor = JSON.parse((await verifyTsr(tokens.sha256!.tsr, ["--json"])).stdout) as Report
    expect(noAnchor.exitCode).toBe(2)
    expect(statusOf(noAnchor, "tsa.anchor")).toMatchObject({ status: "error" })
    // Not a token at all.
    Fs.writeFileSync(file("junk.tsr"), Crypto.randomBytes(64))
    const junk = JSON.parse((await verifyTsr(file("junk.tsr"), [view, "--json"])).stdout) as Report
    expect(failed(junk)).toEqual(["tsa.format"])
  }, 90_000)

  it("a token whose signed ESSCertIDv2 names another certificate fails tsa.ess, the rest holding", async () => {
    const policy = "2.25.254261995566862221233085334779423650513"
    const loaded = loadSigner({ ...ca, chainFile: undefined }, new Date())
    if (!("signer" in loaded)) throw new Error(loaded.problems.join("; "))
    const other = loadSigner({ ...otherCa, chainFile: undefined }, new Date())
    if (!("signer" in other)) throw new Error(other.problems.join("; "))
    const parsed = parseRequest(Fs.readFileSync(file("sha256.tsq")), policy)
    if (parsed._tag !== "Stamp") throw new Error(parsed.text)
    const tokenWith = (signer: typeof loaded.signer) =>
      issue(signer, template(signer, policy, 1000), parsed.request, { serial: 77n, genTime: new Date() }).response
    const trusted = readCaPems(Fs.readFileSync(ca.caFile, "utf8"), ca.caFile)
    const data = Fs.readFileSync(file("data.txt"))
    const good = await checkToken(tokenWith(loaded.signer), data, trusted)
    expect(good.checks.filter((c) => c.status !== "pass")).toEqual([])
    // The TSA's own key and certificate, but the ESS attribute of the other CA's TSA certificate (signed with the rest).
    const swapped = await checkToken(tokenWith({ ...loaded.signer, essAttribute: essAttribute(other.signer.certificate) }), data, trusted)
    expect(swapped.checks.filter((c) => c.status !== "pass").map((c) => c.id)).toEqual(["tsa.ess"])
    expect(swapped.checks.find((c) => c.id === "tsa.ess")!.message).toContain("names another certificate")
  })
})
