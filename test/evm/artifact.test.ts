// The committed artifact (src/evm/AnchorRegistry.artifact.json + AnchorRegistry.abi.ts) must be
// what contracts/AnchorRegistry.sol compiles to. If this fails: npm run build:contract
//   npx vitest run test/evm/artifact.test.ts
import { readFileSync } from "node:fs"
import path from "node:path"
import { describe, expect, it } from "vitest"
import { compileAnchorRegistry, renderOutputs, ROOT_DIR } from "../../scripts/build-contract.ts"
import artifact from "../../src/evm/AnchorRegistry.artifact.json" with { type: "json" }

describe("AnchorRegistry artifact", () => {
  it("is up to date with contracts/AnchorRegistry.sol (recompiled with the local solc)", () => {
    const fresh = compileAnchorRegistry()
    // Bytecode first, for a readable failure.
    expect(artifact.bytecode, "stale artifact: run npm run build:contract").toBe(fresh.bytecode)
    expect(artifact.deployedBytecode, "stale artifact: run npm run build:contract").toBe(fresh.deployedBytecode)
    for (const { file, text } of renderOutputs(fresh)) {
      expect(readFileSync(file, "utf8"), `${path.relative(ROOT_DIR, file)} is stale: run npm run build:contract`).toBe(text)
    }
  }, 60_000)

  it("records the compiler and settings it was built with", () => {
    expect(artifact.solcLongVersion).toMatch(/^0\.8\.28\+commit\./)
    expect(artifact.settings).toMatchObject({ evmVersion: "cancun", optimizer: { enabled: true } })
    expect(Object.keys(artifact.sourceHashes)).toContain("contracts/AnchorRegistry.sol")
  })
})
