/**
 * The fan-out's division of its rows' records under the per-receiver cap (src/webhooks/fanOut.ts
 * `divideByHostCaps`), a pure function: which records one step takes, which wait in their rows, in what order.
 *   npx vitest run test/webhooks/host-caps.test.ts
 */
import { describe, expect, it } from "vitest"
import { divideByHostCaps } from "../../src/webhooks/fanOut.ts"

const row = (id: string, records: ReadonlyArray<readonly [recordId: string, host: string]>) => ({
  id,
  batchEventId: `be-${id}`,
  recordIds: records.map(([r]) => r),
  hosts: records.map(([, h]) => h)
})

describe("divideByHostCaps", () => {
  it("takes records in order up to the step's limit; the rest wait in their row, in order", () => {
    const rows = [row("1", [["r1", "a"], ["r2", "b"], ["r3", "c"], ["r4", "d"], ["r5", "e"]])]
    expect(divideByHostCaps(rows, 3, 10, new Map())).toEqual([{
      fanoutId: "1",
      batchEventId: "be-1",
      recordCount: 5,
      taken: [{ recordId: "r1", host: "a" }, { recordId: "r2", host: "b" }, { recordId: "r3", host: "c" }],
      waiting: { recordIds: ["r4", "r5"], hosts: ["d", "e"] }
    }])
  })

  it("a receiver at its cap (attempts in flight counted) holds back only its own records", () => {
    const rows = [row("1", [["r1", "a"], ["r2", "a"], ["r3", "b"], ["r4", "a"], ["r5", "b"]])]
    const inFlight = new Map([["a", 1]])
    const [division] = divideByHostCaps(rows, 100, 2, inFlight)
    expect(division!.taken).toEqual([{ recordId: "r1", host: "a" }, { recordId: "r3", host: "b" }, { recordId: "r5", host: "b" }])
    expect(division!.waiting).toEqual({ recordIds: ["r2", "r4"], hosts: ["a", "a"] })
    // The caller's counts are its own: the step counts on a copy.
    expect([...inFlight]).toEqual([["a", 1]])
  })

  it("counts the cap and the limit across rows; the rows after the one that reaches the limit are left out", () => {
    const rows = [
      row("1", [["r1", "a"], ["r2", "a"]]),
      row("2", [["r3", "a"], ["r4", "b"], ["r5", "c"]]),
      row("3", [["r6", "d"]])
    ]
    const divisions = divideByHostCaps(rows, 4, 2, new Map())
    expect(divisions.map((d) => d.fanoutId)).toEqual(["1", "2"])
    expect(divisions[0]!.taken.map((t) => t.recordId)).toEqual(["r1", "r2"])
    expect(divisions[0]!.waiting.recordIds).toEqual([])
    // a is at its cap from row 1; b and c go on, c is the fourth and last taken.
    expect(divisions[1]!.taken.map((t) => t.recordId)).toEqual(["r4", "r5"])
    expect(divisions[1]!.waiting).toEqual({ recordIds: ["r3"], hosts: ["a"] })
  })

  it("a record without a host counts under the empty host", () => {
    const rows = [{ id: "1", batchEventId: "be-1", recordIds: ["r1", "r2"], hosts: [] }]
    const [division] = divideByHostCaps(rows, 10, 1, new Map())
    expect(division!.taken).toEqual([{ recordId: "r1", host: "" }])
    expect(division!.waiting).toEqual({ recordIds: ["r2"], hosts: [""] })
  })
})
