import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, startNode, type TestNode } from "../support/node.ts"

describe("smoke", () => {
  let node: TestNode
  let key: string
  beforeAll(async () => {
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  })
  afterAll(() => node.stop())

  it("accepts a record", async () => {
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { hello: "world" } } })
    expect(r.status).toBe(202)
    expect(r.json.data.hash).toBe("93a23971a914e5eacbf0a8d25154cda309c3c1c72fbb9914d47c60f3cb681588")
  })
})
