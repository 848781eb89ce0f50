/**
 * End to end with the real anchoring pipeline on anvil: a record submitted with a webhookUrl is
 * anchored, and the `anchor.confirmed` event written by the pipeline (same transaction as ANCHORED)
 * reaches the receiver as form B, signed, with the same anchor facts the API reports.
 * Uses the EVM test support (test/evm/*) read-only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { allAnchored, call, deploy, network, startEvmNode, waitFor, type EvmTestNode } from "../evm/support.ts"
import { query } from "../support/db.ts"
import { expectDeliveryHeaders, type Receiver, startReceiver, verifySignature } from "./support.ts"

describe("anchor.confirmed from the EVM pipeline (anvil)", () => {
  let anvil: Anvil
  let node: EvmTestNode
  let receiver: Receiver
  let key: string
  let account: string
  const networkId = "local-anvil-webhooks"

  beforeAll(async () => {
    receiver = await startReceiver()
    anvil = await startAnvil()
    const privateKey = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, privateKey)
    node = await startEvmNode({
      networks: [network({
        networkId,
        rpcUrl: anvil.rpcUrl,
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 1,
        environment: "test",
        batchMaxSize: 50,
        batchWindowMs: 200,
        pollIntervalMs: 200
      }, privateKey)]
    })
    account = await node.createAccount()
    key = await node.createKey(account)
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await anvil?.stop()
    await receiver?.close()
  })

  it("form B with the anchor of GET /v1/records/{id}, once per record, signed with the account's secret", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", {
        key,
        body: { data: { i }, webhookUrl: `${receiver.url}/anchored`, metadata: { i }, packageMode: "SEPARATED" }
      })
      expect(r.status).toBe(202)
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 30_000)
    const got = await receiver.waitFor(3, 10_000, (r) => r.path === "/anchored")
    const secret = (await query<{ webhook_secret: string }>(node.databaseUrl, // the secret of the records' environment (settings are per environment, migration 0013)
      "SELECT secret AS webhook_secret FROM webhook_settings WHERE account_id = $1 AND environment = (SELECT environment FROM records WHERE account_id = $1 LIMIT 1)",
      [account]))[0].webhook_secret
    for (const r of got) {
      const body = JSON.parse(r.body)
      const view = (await call(node.baseUrl, "GET", `/v1/records/${body.recordId}`, { key })).json.data
      const anchor = view.anchors[0]
      expectDeliveryHeaders(r, { event: "ANCHORED", hash: view.hash, packageMode: "SEPARATED", chain: "evm", network: networkId, attempt: 0 })
      expect(verifySignature(secret, r.body, r.headers["x-webhook-signature"])).toBe(true)
      expect(body).toEqual({
        type: "ANCHORED",
        hash: view.hash,
        recordId: view.recordId,
        chainType: "evm",
        networkId,
        blockNumber: anchor.blockNumber,
        transactionHash: anchor.txHash,
        batchId: anchor.batchId,
        anchoredAt: view.anchoredAt,
        merkleProof: anchor.merkleProof,
        metadata: view.metadata
      })
      expect(Object.keys(body)).toEqual(["type", "hash", "recordId", "chainType", "networkId", "blockNumber", "transactionHash", "batchId", "anchoredAt",
        "merkleProof", "metadata"])
      expect(body.transactionHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect(Number.isInteger(body.batchId)).toBe(true)
    }
    expect(new Set(got.map((r) => JSON.parse(r.body).recordId))).toEqual(new Set(ids))
  }, 60_000)
})
