// A node whose configured AnchorRegistry predates issue 27 (no anchorWithLogRoot) keeps anchoring: the
// writer sends `anchor` alone, clears the batch's RFC 9162 root, and those records have no COSE receipt
// (404) while their proof bundles verify as before.
// The fixture is that contract's creation bytecode as committed before issue 27
// (src/evm/AnchorRegistry.artifact.json at eb62d1a).
//   npx vitest run test/evm/old-contract.test.ts
import { readFileSync } from "node:fs"
import { createPublicClient, createWalletClient, http, type Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, network, query, startEvmNode, waitFor } from "./support.ts"

const OLD_BYTECODE = readFileSync(new URL("../fixtures/AnchorRegistry-before-issue-27.bytecode.txt", import.meta.url), "utf8").trim() as Hex

let anvil: Anvil
let node: Awaited<ReturnType<typeof startEvmNode>>
let key: string

beforeAll(async () => {
  anvil = await startAnvil()
  const privateKey = await anvil.fundedKey()
  const account = privateKeyToAccount(privateKey)
  const wallet = createWalletClient({ account, transport: http(anvil.rpcUrl) })
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  const chainId = await client.getChainId()
  const hash = await wallet.deployContract({ abi: anchorRegistryAbi, bytecode: OLD_BYTECODE, account, chain: null })
  const address = (await client.waitForTransactionReceipt({ hash })).contractAddress!
  node = await startEvmNode({
    networks: [network({
      networkId: "old-contract",
      rpcUrl: anvil.rpcUrl,
      chainId,
      contractAddress: address,
      confirmations: 1,
      environment: "test",
      batchMaxSize: 50,
      batchWindowMs: 200,
      pollIntervalMs: 100
    }, privateKey)]
  })
  key = await node.createKey(await node.createAccount())
}, 90_000)
afterAll(async () => {
  await node?.stop()
  await anvil?.stop()
})

describe("an AnchorRegistry deployed before issue 27", () => {
  it("anchors with anchor() alone: records ANCHORED, proofs served, no receipt, no log root kept", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { old: i } } })
      expect(r.status).toBe(202)
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 30_000)
    const batches = await query<{ log_root: string | null }>(node.databaseUrl,
      "SELECT DISTINCT b.log_root FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = ANY($1)", [ids])
    expect(batches.map((b) => b.log_root)).toEqual([null])
    for (const id of ids) {
      expect((await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).status).toBe(200)
      const receipt = await call(node.baseUrl, "GET", `/v1/records/${id}/receipt`, { key })
      expect(receipt.status).toBe(404)
    }
  }, 60_000)
})
