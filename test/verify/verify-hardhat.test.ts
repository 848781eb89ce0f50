// `anchord verify` on Hardhat's network (the EDR chain of `anchord dev`): a good bundle verifies
// (CLI process), a tampered one does not, and an RPC that goes away mid-life is exit 2.
//   npx vitest run test/verify/verify-hardhat.test.ts
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serveEdrChain } from "../../src/dev/evmChain.ts"
import type { Report } from "../../src/verify/report.ts"
import { clone, jsonFile, runCli, startVerifyEnv, type Anchored, type VerifyEnv } from "./support.ts"

/** Hardhat's well-known development account #2 (a test key with 10,000 ETH on EDR). */
const HARDHAT_KEY_2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" as const

let scope: Scope.Closeable
let env: VerifyEnv
let records: Array<Anchored>

beforeAll(async () => {
  scope = await Effect.runPromise(Scope.make())
  const server = await Effect.runPromise(Scope.provide(serveEdrChain({ host: "127.0.0.1", port: 0 }), scope))
  env = await startVerifyEnv({ rpcUrl: server.rpcUrl, privateKey: HARDHAT_KEY_2 }, "hardhat")
  records = await env.anchor([{ data: { hardhat: 1 } }, { data: { hardhat: 2 }, packageMode: "IN_PLACE" }])
}, 60_000)
afterAll(async () => {
  await env?.node.stop()
  if (scope) await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe("anchord verify on Hardhat's network", () => {
  it("verifies a bundle with its data and an IN_PLACE document (exit 0); a changed proof is exit 1", async () => {
    const [plain, inPlace] = records
    const ok = await runCli([jsonFile(plain!.bundle), "--rpc", env.rpcUrl, "--data", jsonFile(plain!.data), "--json"])
    const report = JSON.parse(ok.stdout) as Report
    expect(ok.code).toBe(0)
    expect(report.outcome).toBe("verified")
    expect(report.hashSource).toBe("data")
    expect(report.checks.filter((c) => c.status !== "pass")).toEqual([])

    const doc = await runCli([jsonFile(inPlace!.lookup), "--rpc", env.rpcUrl])
    expect(doc.code).toBe(0)
    expect(doc.stdout).toMatch(/PASS\s+evm\.transaction/)

    const tampered = clone(plain!.bundle)
    tampered.anchors[0].merkleProof = ["0x" + "ab".repeat(32), ...tampered.anchors[0].merkleProof]
    const bad = await runCli([jsonFile(tampered), "--rpc", env.rpcUrl])
    expect(bad.code).toBe(1)
    expect(bad.stdout).toMatch(/FAIL\s+merkle-proof/)
    expect(bad.stdout).toMatch(/FAIL\s+evm\.contract-verify/)
  }, 30_000)

  it("--data with other data than anchored: not verified, the hash check says why", async () => {
    const [plain] = records
    const r = await runCli([jsonFile(plain!.bundle), "--rpc", env.rpcUrl, "--data", jsonFile({ hardhat: 3 })])
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/FAIL\s+hash\s+sha256\(JCS\(data\)\) = [0-9a-f]{64}, but the bundle states/)
  }, 30_000)
})
