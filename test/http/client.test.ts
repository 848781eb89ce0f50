/** The typed client, built from the API definition, against a real node. */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeClient } from "../../src/api/client.ts"
import { startNode, type TestNode } from "../support/node.ts"

describe("typed client", () => {
  let node: TestNode
  let key: string
  beforeAll(async () => {
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  })
  afterAll(() => node.stop())

  it("anchors, reads back and decodes errors into their classes", async () => {
    const result = await Effect.runPromise(Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: node.baseUrl, apiKey: key })
      const created = yield* client.records.anchor({ payload: { data: { typed: true } }, headers: {} })
      const fetched = yield* client.records.get({ params: { recordId: created.data.recordId }, headers: {}, query: {} })
      const missing = yield* Effect.flip(client.records.get({ params: { recordId: "0".repeat(24) }, headers: {}, query: {} }))
      const health = yield* client.system.health()
      return { created, fetched, missing, health }
    }))
    expect(result.created.data.status).toBe("QUEUED")
    expect(result.fetched.data).toEqual(result.created.data)
    expect(result.missing).toMatchObject({ success: false, errorCode: "RECORD_NOT_FOUND" })
    expect(result.missing.constructor.name).toBe("NotFound")
    expect(result.health.data.status).toBe("ok")
  })
})
