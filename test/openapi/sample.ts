/**
 * An integrator's client, as a third party would write it: types generated from GET /v1/openapi.json
 * by openapi-typescript (./anchord-api.ts), requests by openapi-fetch, no casts. It calls every
 * operation of the document (several of them into their error answers too) and records every
 * exchange, which test/openapi/client.test.ts checks against the document.
 */
import createClient, { type Middleware } from "openapi-fetch"
import type { paths } from "./anchord-api.ts"

export interface Exchange {
  readonly method: string
  /** The document's path template (`/v1/records/{recordId}`). */
  readonly path: string
  readonly status: number
  readonly headers: Record<string, string>
  /** The parsed JSON body; undefined for an empty one. */
  readonly body: unknown
}

export const runSample = async (options: { readonly baseUrl: string; readonly apiKey: string; readonly webhookUrl: string }) => {
  const exchanges: Array<Exchange> = []
  const record: Middleware = {
    async onResponse({ request, response, schemaPath }) {
      // JSON bodies parsed; others (a certificate's PDF) recorded by their content type alone.
      const json = (response.headers.get("content-type") ?? "").startsWith("application/json")
      const text = json ? await response.clone().text() : ""
      exchanges.push({
        method: request.method,
        path: schemaPath,
        status: response.status,
        headers: Object.fromEntries(response.headers),
        body: text === "" ? undefined : JSON.parse(text)
      })
    }
  }
  const client = createClient<paths>({ baseUrl: options.baseUrl, headers: { authorization: `Bearer ${options.apiKey}` } })
  client.use(record)
  const anonymous = createClient<paths>({ baseUrl: options.baseUrl })
  anonymous.use(record)

  // System
  await anonymous.GET("/v1/health")
  const document = await anonymous.GET("/v1/openapi.json")
  const etag = document.response.headers.get("etag") ?? ""
  await anonymous.GET("/v1/openapi.json", { params: { header: { "If-None-Match": etag } } })

  // Records
  const body = { data: { invoice: "INV-1", total: 12.5, lines: [{ sku: "A", qty: 2 }] }, metadata: { customer: "acme" }, collection: "invoices" }
  const anchored = await client.POST("/v1/anchor", { body, params: { header: { "Idempotency-Key": "sample-1" } } })
  await client.POST("/v1/anchor", { body, params: { header: { "Idempotency-Key": "sample-1" } } })
  await client.POST("/v1/anchor", { body: { ...body, data: { other: true } }, params: { header: { "Idempotency-Key": "sample-1" } } })
  await client.POST("/v1/anchor", { body: { data: { bad: 1 }, collection: "" } })
  await anonymous.POST("/v1/anchor", { body })
  const encryptionKey = "0123456789abcdef0123456789abcdef"
  const encrypted = await client.POST("/v1/anchor/encrypted", { body: { data: { secret: "s" }, encryptionKey } })
  await client.POST("/v1/anchor/encrypted", { body: { data: { secret: "s" }, encryptionKey: "short" } })
  const byHash = await client.POST("/v1/anchor/hash", { body: { hash: "ab".repeat(32), metadata: { source: "sample" } } })
  await client.POST("/v1/anchor/batch", { body: { records: [{ data: { n: 1 } }, { data: { n: 2 }, chain: "evm" }] } })
  await client.POST("/v1/anchor/batch", { body: { records: [{ data: { n: 3 } }, { data: { n: 4 }, collection: "" }] } })

  const recordId = anchored.data?.data.recordId ?? ""
  const hash = anchored.data?.data.hash ?? ""
  await client.GET("/v1/records", { params: { query: { limit: 2, collection: "invoices" } } })
  await client.GET("/v1/records", { params: { query: { status: "QUEUED", includeDeleted: "true" } } })
  await client.GET("/v1/records/{recordId}", { params: { path: { recordId } } })
  await client.GET("/v1/records/{recordId}", {
    params: { path: { recordId: encrypted.data?.data.recordId ?? "" }, header: { "X-Encryption-Key": encryptionKey } }
  })
  await client.GET("/v1/records/{recordId}", { params: { path: { recordId: "ffffffffffffffffffffffff" } } })
  await client.GET("/v1/records/{recordId}", { params: { path: { recordId: "not-an-id" } } })
  await client.PATCH("/v1/records/{recordId}", {
    params: { path: { recordId } },
    body: { metadata: { customer: "acme", paid: true }, webhookUrl: options.webhookUrl }
  })
  await client.PATCH("/v1/records/{recordId}", { params: { path: { recordId } }, body: { hash: "00".repeat(32) } })
  await client.GET("/v1/records/{recordId}/proof", { params: { path: { recordId } } })
  await client.GET("/v1/proof/{hash}", { params: { path: { hash } } })
  await client.GET("/v1/proof/{hash}", { params: { path: { hash: "cd".repeat(32) } } })
  await client.DELETE("/v1/records/{recordId}", { params: { path: { recordId: byHash.data?.data.recordId ?? "" }, query: { mode: "soft" } } })
  await client.GET("/v1/records/{recordId}", { params: { path: { recordId: byHash.data?.data.recordId ?? "" } } })
  await client.GET("/v1/usage")

  // Certificates: this node anchors nowhere, so the record is not anchored yet (409); an unknown hash is 404
  await client.GET("/v1/records/{recordId}/certificate", { params: { path: { recordId } }, parseAs: "arrayBuffer" })
  await client.GET("/v1/certificate/{hash}", { params: { path: { hash: "cd".repeat(32) } }, parseAs: "arrayBuffer" })

  // Time stamps (RFC 3161): this node has no TSA configured, so each answers 404 NOT_FOUND saying so
  // (test/tsa/ sends real TimeStampReqs to a node with one)
  await client.POST("/v1/timestamp", { parseAs: "arrayBuffer" })
  await client.POST("/tsa", { parseAs: "arrayBuffer" })
  await client.GET("/v1/timestamp/{serial}", { params: { path: { serial: "1" } } })

  // COSE Receipts: the record is not anchored yet (409); this node has no receipt key, so the keys are 404
  // (test/receipts/ fetches real receipts from a node with one)
  await client.GET("/v1/records/{recordId}/receipt", { params: { path: { recordId } }, parseAs: "arrayBuffer" })
  await client.GET("/.well-known/scitt-keys", { parseAs: "arrayBuffer" })
  await client.GET("/.well-known/anchord-receipt-key.pem", { parseAs: "text" })
  // Its proof in the network's transparency log (none here: the sample's network sends no checkpoints)
  await client.GET("/v1/records/{recordId}/log-proof", { params: { path: { recordId } }, parseAs: "text" })

  // Verification by the node
  await client.POST("/v1/verify", { body: { hash } })

  // Webhooks: settings, the secret, the delivery the PATCH above caused
  await client.GET("/v1/webhooks")
  await client.PUT("/v1/webhooks", { body: { events: ["anchor.confirmed", "record.updated"], payloadFormat: "multichain" } })
  await client.POST("/v1/webhooks/secret/rotate", { body: {} })
  await client.POST("/v1/webhooks/secret/confirm", { body: {} })
  let deliveryId: string | undefined
  for (let i = 0; i < 200 && deliveryId === undefined; i++) {
    const page = await client.GET("/v1/webhooks/deliveries", { params: { query: { limit: 10, recordId } } })
    deliveryId = page.data?.data.deliveries[0]?.id
    if (deliveryId === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await client.GET("/v1/webhooks/deliveries/{deliveryId}", { params: { path: { deliveryId: deliveryId ?? "" } } })
  await client.GET("/v1/webhooks/deliveries/{deliveryId}", { params: { path: { deliveryId: "dlv_0000" } } })
  await client.POST("/v1/webhooks/deliveries/{deliveryId}/redeliver", { params: { path: { deliveryId: deliveryId ?? "" } }, body: {} })
  // The request log of batched delivery (none here: this environment sends one event per request)
  await client.GET("/v1/webhooks/requests", { params: { query: { limit: 10, recordId } } })
  const requestId = `whb_${"0".repeat(32)}`
  await client.GET("/v1/webhooks/requests/{requestId}", { params: { path: { requestId } } })
  await client.POST("/v1/webhooks/requests/{requestId}/redeliver", { params: { path: { requestId } }, body: {} })

  return { exchanges, recordId, deliveryId }
}
