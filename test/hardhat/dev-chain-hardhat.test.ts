/**
 * Issue 24 (5): `npm start` with DEV_CHAIN=hardhat runs Hardhat's chain (EDR, in process) instead of
 * Anvil, says so in the banner with what it loses, anchors on it, and a restart is a new chain
 * (records re-anchored: the reset line of docs/dev-chain.md).
 *   npx vitest run test/hardhat/dev-chain-hardhat.test.ts
 */
import * as Fs from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import { type DevNode, startDevNode, tempDataDir } from "../../scripts/dev-node.ts"
import { waitFor } from "../support/wait.ts"

const dataDir = tempDataDir("anchord-dev-hardhat-")
let node: DevNode | undefined
afterAll(async () => {
  await node?.stop("SIGINT")
  Fs.rmSync(dataDir, { recursive: true, force: true })
}, 60_000)

const env = { DEV_CHAIN: "hardhat", DEV_CHAIN_PORT: "0" }

const anchoredRecord = async (n: DevNode, id?: string) => {
  const auth = { authorization: `Bearer ${n.key}`, "content-type": "application/json" }
  const recordId: string = id ?? ((await (await fetch(`${n.baseUrl}/v1/anchor`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ data: { chain: "hardhat" } })
  })).json()) as { data: { recordId: string } }).data.recordId
  return waitFor(`${recordId} ANCHORED`, async () => {
    const r = ((await (await fetch(`${n.baseUrl}/v1/records/${recordId}`, { headers: auth })).json()) as { data: { recordId: string; status: string } }).data
    return r.status === "ANCHORED" ? r : undefined
  }, 60_000, 200)
}

describe("npm start with DEV_CHAIN=hardhat", () => {
  it("runs Hardhat's chain, says what it loses, anchors on it; a restart re-anchors on a new chain", async () => {
    node = await startDevNode(dataDir, { env })
    expect(node.output()).toMatch(
      /Chain:\s+http:\/\/127\.0\.0\.1:\d+\s+\(Hardhat EDR, chainId 31337, network "hardhat-local", test keys; state in memory: lost at every stop/
    )
    const client = (await (await fetch(node.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "web3_clientVersion", params: [] })
    })).json()) as { result?: unknown }
    expect(String(client.result)).not.toMatch(/anvil/i)
    const record = await anchoredRecord(node)
    await node.stop("SIGINT")

    node = await startDevNode(dataDir, { env })
    await waitFor("the reset line", async () => /dev chain was reset \(Hardhat's chain starts empty at every start\): 1 records re-queued/.test(node!.output()),
      30_000)
    const again = await anchoredRecord(node, record.recordId)
    expect(again.recordId).toBe(record.recordId)
  }, 300_000)
})
