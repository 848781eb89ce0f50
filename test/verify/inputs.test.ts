// `anchord verify`'s inputs that are not proofs, and its connection profile (no chain, no node).
//   npx vitest run test/verify/inputs.test.ts
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { readFabricProfile } from "../../src/verify/command.ts"
import { InputError, readInput } from "../../src/verify/input.ts"

describe("verify inputs", () => {
  it("a saved API error body is named as such, with its code and message", () => {
    const body = { success: false, error: "record 6b04… was deleted", errorCode: "RECORD_DELETED" }
    expect(() => readInput(body)).toThrow(InputError)
    expect(() => readInput(body)).toThrow(
      "this file is an API error response: RECORD_DELETED: record 6b04… was deleted, not a proof bundle"
    )
    expect(() => readInput({ hello: 1 })).toThrow(/^not a proof bundle/)
  })

  it("a Fabric profile: paths relative to the file, other members as given, wrong types refused", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-profile-"))
    try {
      const file = Path.join(dir, "profile.json")
      Fs.writeFileSync(file, JSON.stringify({
        peerEndpoint: "127.0.0.1:7051",
        mspId: "AnchordDevMSP",
        certPath: "msp/client/cert.pem",
        keyPath: "/abs/key.pem",
        channel: "anchord",
        chaincode: "anchord"
      }))
      expect(readFabricProfile(file)).toEqual({
        peerEndpoint: "127.0.0.1:7051",
        mspId: "AnchordDevMSP",
        certPath: Path.join(dir, "msp/client/cert.pem"),
        keyPath: "/abs/key.pem",
        channel: "anchord",
        chaincode: "anchord"
      })
      Fs.writeFileSync(file, JSON.stringify({ peerEndpoint: 7051 }))
      expect(() => readFabricProfile(file)).toThrow("peerEndpoint: expected a string")
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
