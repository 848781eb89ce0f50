/**
 * Issue 24 (5), the Hardhat path end to end: `hardhat node` on a free port as the node's EVM chain,
 * AnchorRegistry deployed by the Ignition module (admin and anchorer parameters), `anchord start`
 * reading Ignition's deployed_addresses.json (EVM_NETWORKS `deployment`) and signing as the
 * anchorer the module granted, a record ANCHORED and verified by `anchord verify` against that RPC,
 * and ANCHORER_ROLE granted to another signer by ignition/modules/GrantAnchorer.ts.
 *   npx vitest run test/hardhat/hardhat-node.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { createPublicClient, http } from "viem"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { anchorRegistryAbi, ANCHORER_ROLE, DEFAULT_ADMIN_ROLE } from "../../src/evm/deploy.ts"
import { freshDatabase } from "../support/db.ts"
import { call } from "../support/node.ts"
import { anchordJson, forwardOutput, killAndWait, logRun, spawnAnchord, track } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const hardhatCli = Path.join(root, "node_modules/hardhat/dist/src/cli.js")
const files = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-hardhat-"))
const deploymentId = `test-${process.pid}-${Date.now()}`
const grantId = `${deploymentId}-grant`
// Hardhat's well-known development accounts (`hardhat node` prints them): #1 admin, #2 the node's signer, #3 a second signer.
const ADMIN = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
const ANCHORER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
const ANCHORER_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a"
const SECOND = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"

const children: Array<ChildProcess.ChildProcess> = []
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) await killAndWait(child, "SIGTERM")
  for (const id of [deploymentId, grantId]) Fs.rmSync(Path.join(root, "ignition/deployments", id), { recursive: true, force: true })
  Fs.rmSync(files, { recursive: true, force: true })
})

/** `npx hardhat …` as the docs write it (the project's Node runs Hardhat), with the chain's URL in ANCHORD_RPC_URL. */
const hardhat = (args: ReadonlyArray<string>, rpcUrl: string) => {
  const result = ChildProcess.spawnSync(process.execPath, [hardhatCli, ...args], {
    cwd: root,
    env: { ...process.env, ANCHORD_RPC_URL: rpcUrl },
    encoding: "utf8",
    timeout: 120_000
  })
  logRun(`hardhat ${args.join(" ")}`, result)
  expect(result.status, result.stderr).toBe(0)
  return result.stdout
}

describe("Hardhat: Ignition deployment and hardhat node as the node's chain", () => {
  it("deploys with Ignition, anchors a record with anchord start, verifies it with anchord verify, grants a second anchorer", async () => {
    const port = await freePort()
    const rpcUrl = `http://127.0.0.1:${port}`
    const chain = track(ChildProcess.spawn(process.execPath, [hardhatCli, "node", "--port", String(port)], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    }))
    children.push(chain)
    forwardOutput(chain, "hardhat node")
    const client = createPublicClient({ transport: http(rpcUrl) })
    await waitFor("hardhat node answering", () => client.getChainId().then((id) => id === 31337), 60_000, 200)

    const parameters = Path.join(files, "parameters.json")
    Fs.writeFileSync(parameters, JSON.stringify({ AnchorRegistryModule: { admin: ADMIN, anchorer: ANCHORER } }))
    hardhat(["ignition", "deploy", "ignition/modules/AnchorRegistry.ts", "--network", "localhost", "--parameters", parameters, "--deployment-id", deploymentId],
      rpcUrl)
    const deployed = Path.join(root, "ignition/deployments", deploymentId, "deployed_addresses.json")
    const address = JSON.parse(Fs.readFileSync(deployed, "utf8"))["AnchorRegistryModule#AnchorRegistry"]
    const hasRole = (role: `0x${string}`, account: `0x${string}`) =>
      client.readContract({ address, abi: anchorRegistryAbi, functionName: "hasRole", args: [role, account] })
    expect(await hasRole(DEFAULT_ADMIN_ROLE, ADMIN)).toBe(true)
    expect(await hasRole(ANCHORER_ROLE, ANCHORER)).toBe(true)

    // The node takes the address and chain id from Ignition's files; it signs as the granted anchorer.
    const env = {
      DATABASE_URL: await freshDatabase(),
      PORT: String(await freePort()),
      EVM_NETWORKS: JSON.stringify([{ networkId: "hardhat-node", rpcUrl, deployment: deployed, confirmations: 1, batchWindowMs: 200, pollIntervalMs: 200 }]),
      EVM_PRIVATE_KEY_HARDHAT_NODE: ANCHORER_KEY
    }
    const account = anchordJson(["accounts", "create", "hardhat", "--activate", "--json"], env)
    const key = anchordJson(["keys", "create", account.id, "--json"], env).key
    const node = await spawnAnchord(env)
    children.push(node)
    const base = `http://127.0.0.1:${env.PORT}`
    const posted = await call(base, "POST", "/v1/anchor", { key, body: { data: { via: "hardhat node" } } })
    expect(posted.status).toBe(202)
    const id = posted.json.data.recordId
    const record = await waitFor("record ANCHORED", async () => {
      const r = await call(base, "GET", `/v1/records/${id}`, { key })
      return r.json.data.status === "ANCHORED" ? r.json.data : undefined
    }, 60_000, 200)
    expect(record.anchors?.[0] ?? record).toBeDefined()
    const proof = await call(base, "GET", `/v1/records/${id}/proof`, { key })
    expect(proof.status).toBe(200)
    const proofFile = Path.join(files, "proof.json")
    Fs.writeFileSync(proofFile, JSON.stringify(proof.json))
    const verify = ChildProcess.spawnSync(process.execPath, [Path.join(root, "src/cli/main.ts"), "verify", proofFile, "--rpc", rpcUrl], {
      cwd: root,
      encoding: "utf8"
    })
    logRun(`anchord verify ${proofFile} --rpc ${rpcUrl}`, verify)
    expect(verify.status, verify.stdout + verify.stderr).toBe(0)
    expect(verify.stdout).toMatch(/VERIFIED/)
    expect(verify.stdout.toLowerCase()).toContain(address.toLowerCase())

    // A second signer gets the role through the grant module, sent by account #0 (the deployer keeps its admin role).
    const grant = Path.join(files, "grant.json")
    Fs.writeFileSync(grant, JSON.stringify({ GrantAnchorerModule: { registry: address, account: SECOND } }))
    expect(await hasRole(ANCHORER_ROLE, SECOND)).toBe(false)
    hardhat(["ignition", "deploy", "ignition/modules/GrantAnchorer.ts", "--network", "localhost", "--parameters", grant, "--deployment-id", grantId], rpcUrl)
    expect(await hasRole(ANCHORER_ROLE, SECOND)).toBe(true)
  }, 240_000)
})
