/**
 * Issue 24 (5): every deploy command of the docs runs as written, with the machine's Node (v20
 * here, /usr/bin first on PATH, as a user's shell has it) as `node`, against a chain on a random
 * port. The commands are the lines of fenced blocks preceded by `<!-- deploy-test -->` in README.md,
 * docs/configuration-evm.md, docs/dev-chain.md and docs/contract.md; the only substitutions are the
 * documented placeholders (docs/contract.md, "Deploying AnchorRegistry"): `http://127.0.0.1:<port>`
 * becomes the test chain's URL and `<contract-address>` the address the previous command printed.
 * Each block starts without ignition/deployments/chain-31337/ (as on a new chain); whatever was
 * there before the test is put back afterwards.
 *
 * Independent commands run at once, each group on a chain of its own (the same account deploys on
 * each, so one chain per group keeps the nonces apart): Ignition's deploys and the grant that takes
 * their address on `hardhat node` (Ignition keeps one deployment folder per chain id, so they stay in
 * order), `anchord deploy` / `scripts/deploy.ts` (they write the same deployments/chain-31337.json) on
 * an anvil, `hardhat run` on another.
 *   npx vitest run test/cli/docs-commands.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { forwardOutput, killAndWait, track } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"
import { type Anvil, startAnvil } from "../evm/anvil.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const DOCS = ["README.md", "docs/configuration-evm.md", "docs/dev-chain.md", "docs/contract.md"]
const MARK = "<!-- deploy-test -->"

/** The marked blocks of a markdown file: each a list of commands (backslash continuations joined, comments dropped). */
export const markedBlocks = (text: string): Array<Array<string>> => {
  const blocks: Array<Array<string>> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== MARK) continue
    let j = i + 1
    while (j < lines.length && lines[j]!.trim() === "") j++
    if (!/^```/.test(lines[j] ?? "")) throw new Error(`${MARK} at line ${i + 1} is not followed by a fenced block`)
    const block: Array<string> = []
    let current = ""
    for (j++; j < lines.length && !/^```/.test(lines[j]!); j++) {
      const line = lines[j]!
      if (current === "" && (line.trim() === "" || line.trim().startsWith("#"))) continue
      if (line.endsWith("\\")) current += line.slice(0, -1) + " "
      else {
        block.push((current + line).trim())
        current = ""
      }
    }
    blocks.push(block)
  }
  return blocks
}

// The machine's own node first, as in a user's shell (npx and npm run then put the project's Node 24 first for what they run).
const userPath = ["/usr/bin", ...(process.env.PATH ?? "").split(Path.delimiter).filter((d) => !d.includes("node_modules"))].join(Path.delimiter)
const ignitionLocal = Path.join(root, "ignition/deployments/chain-31337")
const saved = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-docs-commands-")), "chain-31337")
const scratch = [Path.join(root, "deployments/chain-31337.json"), Path.join(root, "deployments/localhost.json")]
  .map((file) => ({ file, before: Fs.existsSync(file) ? Fs.readFileSync(file) : undefined }))
let chain: ChildProcess.ChildProcess | undefined
let hardhatUrl = ""
const anvils: Array<Anvil> = []

beforeAll(async () => {
  if (Fs.existsSync(ignitionLocal)) Fs.renameSync(ignitionLocal, saved)
  const port = await freePort()
  hardhatUrl = `http://127.0.0.1:${port}`
  chain = track(ChildProcess.spawn(process.execPath, [Path.join(root, "node_modules/hardhat/dist/src/cli.js"), "node", "--port", String(port)], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"]
  }))
  forwardOutput(chain, "hardhat node")
  anvils.push(...await Promise.all([startAnvil(), startAnvil()]))
  await waitFor("hardhat node answering", async () =>
    (await fetch(hardhatUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] })
    })).ok, 60_000, 200)
}, 90_000)

afterAll(async () => {
  if (chain !== undefined) await killAndWait(chain, "SIGTERM")
  await Promise.all(anvils.map((a) => a.stop()))
  Fs.rmSync(ignitionLocal, { recursive: true, force: true })
  if (Fs.existsSync(saved)) Fs.renameSync(saved, ignitionLocal)
  for (const { file, before } of scratch) {
    if (before === undefined) Fs.rmSync(file, { force: true })
    else Fs.writeFileSync(file, before)
  }
})

const sh = (command: string) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = track(ChildProcess.spawn("/bin/sh", ["-c", command], {
      cwd: root,
      env: { ...process.env, PATH: userPath, ANCHORD_RPC_URL: "" }
    }))
    let out = ""
    child.stdout!.on("data", (d) => out += d)
    child.stderr!.on("data", (d) => out += d)
    child.on("exit", (code) => resolve({ code, out }))
  })

describe("the docs' deploy commands", () => {
  it("finds the marked blocks", () => {
    const blocks = DOCS.flatMap((doc) => markedBlocks(Fs.readFileSync(Path.join(root, doc), "utf8")))
    expect(blocks.flat().length).toBeGreaterThanOrEqual(8)
    for (const doc of DOCS) expect(markedBlocks(Fs.readFileSync(Path.join(root, doc), "utf8")).length, doc).toBeGreaterThan(0)
  })

  it("each runs as written with Node 20 as node against a chain on a random port", async () => {
    const version = await sh("node --version")
    console.log(`node on the users' PATH: ${version.out.trim()}`)
    // The commands in the docs' order, each once (the same command in two docs runs once: each
    // Hardhat start costs seconds on a busy 2-core machine), with the block it starts.
    const seen = new Set<string>()
    const commands: Array<{ doc: string; line: string; firstOfBlock: boolean }> = []
    for (const doc of DOCS) {
      for (const block of markedBlocks(Fs.readFileSync(Path.join(root, doc), "utf8"))) {
        block.forEach((line, i) => {
          const key = line.replace(/http:\/\/127\.0\.0\.1:\d+/g, "<rpc>")
          if (/<(?!rpc>|contract-address>)[a-z-]+>/.test(key)) throw new Error(`${doc}: undocumented placeholder in: ${line}`)
          if (seen.has(key)) return
          seen.add(key)
          commands.push({ doc, line, firstOfBlock: i === 0 })
        })
      }
    }
    const group = (line: string) => /hardhat ignition|<contract-address>/.test(line) ? "ignition" : /hardhat run/.test(line) ? "hardhat-run" : "deploy"
    const urls: Record<string, string> = { ignition: hardhatUrl, deploy: anvils[0]!.rpcUrl, "hardhat-run": anvils[1]!.rpcUrl }
    const runGroup = async (name: string) => {
      let address = ""
      let ran = 0
      for (const { doc, line, firstOfBlock } of commands.filter((c) => group(c.line) === name)) {
        if (name === "ignition" && firstOfBlock) Fs.rmSync(ignitionLocal, { recursive: true, force: true })
        if (line.includes("<contract-address>") && address === "") throw new Error(`${doc}: no address printed before: ${line}`)
        const command = line.replace(/http:\/\/127\.0\.0\.1:\d+/g, urls[name]!).replace(/<contract-address>/g, address)
        const started = Date.now()
        const r = await sh(command)
        console.log(`$ ${command}  (${doc}; ${name}; exit ${r.code}, ${Date.now() - started} ms)\n${r.out}`)
        expect(r.code, `${doc}: ${line}\n${r.out}`).toBe(0)
        ran++
        const printed = /AnchorRegistryModule#AnchorRegistry - (0x[0-9a-fA-F]{40})|deployed at (0x[0-9a-fA-F]{40})/.exec(r.out)
        if (printed) address = printed[1] ?? printed[2]!
      }
      return ran
    }
    const ran = await Promise.all(Object.keys(urls).map(runGroup))
    console.log(`commands run per group: ${Object.keys(urls).map((g, i) => `${g} ${ran[i]}`).join(", ")}`)
    expect(ran.every((n) => n > 0)).toBe(true)
    expect(ran.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(7)
    // Seven Hardhat/anchord starts, three at a time.
  }, 300_000)
})
