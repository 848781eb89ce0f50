/**
 * bench:verify — (1) offline proof checks per second: `verifyProof` (src/evm/merkle.ts, what
 * `anchord verify` runs) against `StandardMerkleTree.verify` of @openzeppelin/merkle-tree in the
 * same run, plus the whole offline check of a bundle (JCS + SHA-256 of the data, then the proof);
 * (2) wall time of one `anchord verify` process against a local chain (anvil), from spawn to exit,
 * all EVM checks included. Appends the figures to docs/benchmarks/runs.md.
 *   npm run bench:verify            (BENCH_VERIFY_NO_WRITE=1 to only print)
 */
import { opsPerSecond } from "./bench/rate.ts"
import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { Effect } from "effect"
import { createPublicClient, createWalletClient, http, type Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { anchorRegistryAbi } from "../src/evm/AnchorRegistry.abi.ts"
import { deployAnchorRegistry } from "../src/evm/deploy.ts"
import { buildTree, verifyProof } from "../src/anchoring/merkle.ts"
import { recordHash } from "../src/canonical/jcs.ts"
import { readInput } from "../src/verify/input.ts"
import { verifyInput } from "../src/verify/verify.ts"

const root = Path.resolve(import.meta.dirname, "..")
const ANVIL_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" // anvil dev account #0
const LEAVES = 1024

/** Checks per second of wall time and per CPU-second (the machine is shared); a failed check stops the bench. */
const rate = (label: string, seconds: number, f: (i: number) => boolean) => opsPerSecond(label, seconds, f, 2000)
const fmt = (r: { wall: number; cpu: number }) => `${Math.round(r.wall).toLocaleString("en")}/s (${Math.round(r.cpu).toLocaleString("en")} per CPU-second)`

// (1) offline
const data = Array.from({ length: LEAVES }, (_, i) => ({ invoice: i, amount: `${i}.00`, customer: { id: i % 97, name: "ACME" } }))
const hashes = data.map(recordHash)
const tree = buildTree(hashes)
const oz = StandardMerkleTree.of(hashes.map((h) => [`0x${h}`]), ["bytes32"])
const ozProofs = hashes.map((_, i) => oz.getProof(i))
if (oz.root !== tree.root) throw new Error("tree mismatch")
const ours = rate("verifyProof", 2, (i) => verifyProof(hashes[i % LEAVES]!, tree.proofs[i % LEAVES]!, tree.root))
const baseline = rate("StandardMerkleTree.verify", 2,
  (i) => StandardMerkleTree.verify(oz.root, ["bytes32"], [`0x${hashes[i % LEAVES]}`], ozProofs[i % LEAVES]!))
const bundles = hashes.map((h, i) =>
  readInput({
    version: 1,
    hash: h,
    anchors: [{ chainType: "evm", networkId: "bench", chainId: 1, contractAddress: "0x" + "11".repeat(20), batchId: 1, merkleRoot: tree.root,
      merkleProof: tree.proofs[i], txHash: "0x" + "22".repeat(32), blockNumber: 1 }]
  })
)
const fullOffline = rate("verifyInput --offline", 2, (i) => {
  const input = bundles[i % LEAVES]!
  const report = Effect.runSync(verifyInput(input, { rpcFor: () => undefined, offline: true, data: { value: data[i % LEAVES] } }))
  return report.outcome === "verified"
})
console.log(`offline, ${LEAVES}-leaf batch (proofs of ${tree.proofs[0]!.length} elements):`)
console.log(`  verifyProof:                ${fmt(ours)}`)
console.log(`  StandardMerkleTree.verify:  ${fmt(baseline)} (baseline)`)
console.log(`  whole offline check (JCS + SHA-256 + proof + report): ${fmt(fullOffline)}`)

// (2) one `anchord verify` process against anvil
const port = await freePort()
const rpcUrl = `http://127.0.0.1:${port}`
const anvil = spawn(Path.join(root, "node_modules/.bin/anvil"), ["--port", String(port), "--host", "127.0.0.1", "--silent"], { stdio: "ignore" })
const runs: Array<number> = []
const helpRuns: Array<number> = []
let rpcRoundTrip: number
try {
  const client = createPublicClient({ transport: http(rpcUrl) })
  for (let i = 0;; i++) {
    try {
      await client.getChainId()
      break
    } catch {
      if (i > 150) throw new Error("anvil did not start")
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const { address, chainId } = await deployAnchorRegistry({ rpcUrl, privateKey: ANVIL_KEY })
  const wallet = createWalletClient({ transport: http(rpcUrl), account: privateKeyToAccount(ANVIL_KEY) })
  const txHash = await wallet.writeContract({ address, abi: anchorRegistryAbi, functionName: "anchor", args: [tree.root as Hex, LEAVES], chain: null })
  const receipt = await client.waitForTransactionReceipt({ hash: txHash })
  const [batchId] = await client.readContract({ address, abi: anchorRegistryAbi, functionName: "getAnchor", args: [tree.root as Hex] })
  const block = await client.getBlock({ blockNumber: receipt.blockNumber })
  const bundle = {
    version: 1,
    recordId: "0".repeat(24),
    hash: hashes[7],
    hashAlgorithm: "sha256",
    canonicalization: "RFC8785-JCS",
    leafEncoding: "openzeppelin-standard-merkle-tree:bytes32",
    anchors: [{
      chainType: "evm",
      networkId: "bench-anvil",
      chainId,
      contractAddress: address.toLowerCase(),
      batchId: Number(batchId),
      merkleRoot: tree.root,
      merkleProof: tree.proofs[7],
      leafIndex: 7,
      leafCount: LEAVES,
      txHash,
      blockNumber: Number(receipt.blockNumber),
      blockHash: receipt.blockHash,
      anchoredAt: new Date(Number(block.timestamp) * 1000).toISOString()
    }]
  }
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "bench-verify-"))
  const bundlePath = Path.join(dir, "bundle.json")
  const dataPath = Path.join(dir, "data.json")
  Fs.writeFileSync(bundlePath, JSON.stringify(bundle))
  Fs.writeFileSync(dataPath, JSON.stringify(data[7]))
  const t0 = performance.now()
  await client.getBlockNumber()
  rpcRoundTrip = performance.now() - t0
  const once = (args: Array<string>) =>
    new Promise<{ ms: number; code: number; out: string }>((resolve) => {
      const start = performance.now()
      execFile(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], (error, stdout) => {
        resolve({ ms: performance.now() - start, code: error ? Number(error.code) : 0, out: stdout })
      })
    })
  for (let i = 0; i < 7; i++) {
    const r = await once(["verify", bundlePath, "--rpc", rpcUrl, "--data", dataPath])
    if (r.code !== 0) throw new Error(`anchord verify exited ${r.code}:\n${r.out}`)
    runs.push(r.ms)
  }
  for (let i = 0; i < 3; i++) helpRuns.push((await once(["--version"])).ms)
  Fs.rmSync(dir, { recursive: true, force: true })
} finally {
  anvil.kill("SIGTERM")
}
const sorted = [...runs].sort((a, b) => a - b)
const median = sorted[Math.floor(sorted.length / 2)]!
const fullCli = [...helpRuns].sort((a, b) => a - b)[1]!
console.log(
  `anchord verify against anvil (spawn → exit, 7 runs): median ${median.toFixed(0)} ms, min ${sorted[0]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms`
)
console.log(
  `  for comparison: \`anchord --version\` (loads the whole node's CLI) median ${fullCli.toFixed(0)} ms; one RPC round trip ${rpcRoundTrip.toFixed(1)} ms`
)

const cpu = Os.cpus()
const text = `
## bench:verify — ${new Date().toISOString()}

Machine: ${cpu[0]?.model.trim() ?? "?"} × ${cpu.length}, ${
  (Os.totalmem() / 2 ** 30).toFixed(1)
} GiB, ${Os.platform()} ${Os.release()}, Node ${process.version}. Load average at start: ${
  Os.loadavg().map((l) => l.toFixed(2)).join(" ")
} (the machine is shared).

| | figure | target |
|---|---:|---|
| offline proof checks of \`anchord verify\` (\`verifyProof\`, src/evm/merkle.ts), ${LEAVES}-leaf batch, ${
  tree.proofs[0]!.length
}-element proofs, one thread | ${fmt(ours)} | ≥ 100,000/s (wall: ${ours.wall >= 100_000 ? "met" : "MISSED"}; per CPU-second: ${
  ours.cpu >= 100_000 ? "met" : "MISSED"
}) |
| baseline: \`StandardMerkleTree.verify\` (@openzeppelin/merkle-tree), same proofs | ${fmt(baseline)} | |
| ratio verifyProof / baseline (wall) | ${(ours.wall / baseline.wall).toFixed(1)}× | |
| whole offline check of a bundle with data (strict JSON already parsed: JCS + SHA-256 + proof + report) | ${fmt(fullOffline)} | |
| one \`anchord verify bundle --rpc … --data …\` against anvil, spawn → exit, median of 7 (min / max) | ${median.toFixed(0)} ms (${sorted[0]!.toFixed(0)} / ${
  sorted.at(-1)!.toFixed(0)
}) | ≤ 1 s (${median <= 1000 ? "met" : "MISSED"}) |
| for comparison: \`anchord --version\` through the full command line (server, database, chain modules loaded) | ${fullCli.toFixed(0)} ms | |

\`verify\` is dispatched by src/cli/main.ts before anything else is loaded: it imports only src/verify/ (effect, effect/cli,
the JCS and Merkle code; no viem, no database, no server; the Fabric client only for Fabric anchors), and makes its
RPC reads concurrently (six at once, then the block by number).
`
console.log(text)
if (!process.env.BENCH_VERIFY_NO_WRITE) Fs.appendFileSync(Path.join(root, "docs/benchmarks/runs.md"), text)
