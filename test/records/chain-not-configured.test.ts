/**
 * Issue 24: a node without FABRIC_NETWORKS answered 202 to `"chain":"fabric"` and left the record
 * QUEUED forever. A record no configured network anchors in the key's environment is refused at
 * ingest (400 CHAIN_NOT_CONFIGURED), on the gateway's fast path and through HttpApi alike, per item
 * in a batch, and nothing is written.
 *   npx vitest run test/records/chain-not-configured.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { anchorableCheck } from "../../src/doctor/checks.ts"

describe.each([true, false])("a chain no network anchors (fast path %s)", { timeout: 60_000 }, (ingestFastPath) => {
  let node: TestNode
  let key: string
  beforeAll(async () => {
    node = await startNode({ config: { ingestFastPath } })
    key = (await node.createKey(await node.createAccount())).key
  })
  afterAll(() => node?.stop())

  it("is refused with 400 CHAIN_NOT_CONFIGURED, per item in a batch, and nothing is written", async () => {
    for (const chain of ["fabric", "hybrid"]) {
      for (const path of ["/v1/anchor", "/v1/anchor/encrypted", "/v1/anchor/hash"]) {
        const body = path.endsWith("hash")
          ? { hash: "a".repeat(64), chain }
          : { data: { x: 1 }, chain, ...(path.endsWith("encrypted") ? { encryptionKey: "k".repeat(32) } : {}) }
        const r = await call(node.baseUrl, "POST", path, { key, body })
        expect([r.status, r.json.errorCode], `${chain} ${path}`).toEqual([400, "CHAIN_NOT_CONFIGURED"])
        expect(r.json.error).toMatch(new RegExp(`chain ${chain} is not anchored by this node for test keys.*FABRIC_NETWORKS`))
      }
    }
    const batch = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key, body: { records: [{ data: { a: 1 } }, { data: { b: 2 }, chain: "fabric" }] } })
    expect(batch.status).toBe(207)
    expect(batch.json.data.results.map((r: { success: boolean; errorCode?: string }) => r.errorCode ?? "ok")).toEqual(["ok", "CHAIN_NOT_CONFIGURED"])
    const rows = await query<{ chain_type: string }>(node.databaseUrl, "SELECT chain_type FROM records")
    expect(rows.map((r) => r.chain_type)).toEqual(["evm"])
    // EVM records are accepted: EVM_TEST_NETWORK_ID names a network (another node of the database may serve it).
    expect((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { e: 1 }, chain: "evm" } })).status).toBe(202)
  })
})

// The same for EVM: `anchord start` without EVM_NETWORKS (nor EVM_<ENV>_NETWORK_ID) used to accept EVM
// records into a QUEUED they never left.
describe("a node without an EVM network", { timeout: 60_000 }, () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startNode({ evmUnserved: false })
  })
  afterAll(() => node?.stop())

  it("refuses evm and hybrid records (and fabric ones) for test and live keys, and writes nothing", async () => {
    const account = await node.createAccount()
    for (const environment of ["test", "live"] as const) {
      const key = (await node.createKey(account, environment)).key
      for (const chain of ["evm", "hybrid", "fabric"]) {
        for (const path of ["/v1/anchor", "/v1/anchor/hash"]) {
          const body = path.endsWith("hash") ? { hash: "b".repeat(64), chain } : { data: { y: 1 }, chain }
          const r = await call(node.baseUrl, "POST", path, { key, body })
          expect([r.status, r.json.errorCode], `${environment} ${chain} ${path}`).toEqual([400, "CHAIN_NOT_CONFIGURED"])
          expect(r.json.error).toContain(`chain ${chain} is not anchored by this node for ${environment} keys`)
          expect(r.json.error).toMatch(chain === "fabric" ? /no Fabric network \(FABRIC_NETWORKS\)/ : /no EVM network \(EVM_NETWORKS\)/)
        }
      }
      // The key's default chain (evm) is refused too: a batch answers per item.
      const batch = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key, body: { records: [{ data: { a: 1 } }, { data: { b: 2 }, chain: "hybrid" }] } })
      expect([batch.status, batch.json.data?.results?.map((r: { errorCode?: string }) => r.errorCode)]).toEqual([207, ["CHAIN_NOT_CONFIGURED",
        "CHAIN_NOT_CONFIGURED"]])
    }
    expect(await query(node.databaseUrl, "SELECT id FROM records")).toEqual([])
  })
})

describe("doctor's anchorable check", () => {
  it("warns when no EVM network serves, and counts EVM_<ENV>_NETWORK_ID as serving", () => {
    const none = anchorableCheck([], [])
    expect([none.status, none.message]).toEqual(["warn",
      expect.stringMatching(/EVM and hybrid records are refused with CHAIN_NOT_CONFIGURED; evm: none; fabric: none; hybrid: none/)])
    const named = anchorableCheck([], [{ environment: "test" }], { evm: ["test"] })
    expect([named.status, named.message]).toEqual(["ok", expect.stringMatching(/evm: test; fabric: test; hybrid: test/)])
    const live = anchorableCheck([{ environment: "live" }], [{ environment: "test" }])
    expect(live.message).toMatch(/evm: live; fabric: test; hybrid: none/)
  })
})
