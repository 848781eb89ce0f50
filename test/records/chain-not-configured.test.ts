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
        const body = path.endsWith("hash") ? { hash: "a".repeat(64), chain } : { data: { x: 1 }, chain, ...(path.endsWith("encrypted") ? { encryptionKey: "k".repeat(32) } : {}) }
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
    // EVM records are still accepted (they wait for EVM_NETWORKS: doctor warns).
    expect((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { e: 1 }, chain: "evm" } })).status).toBe(202)
  })
})
