/**
 * `anchord/client` as a consumer gets it: built by the same command as `npm install`'s prepare script
 * (into a copy of the package, so the work tree's dist/ is left alone), resolved through package.json
 * `exports`, run as plain JavaScript by the machine's own Node (v20 here: no type stripping) against a
 * real node, type-checked by a consumer's TypeScript without skipLibCheck, and free of Effect.
 *   npx vitest run test/sdk/package.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startNode, type TestNode } from "../support/node.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-sdk-package-"))
const pkg = Path.join(work, "anchord")
const consumer = Path.join(work, "consumer")

/** The machine's own node (PATH without node_modules/.bin), as a user's shell has it. */
const userNode = (process.env.PATH ?? "").split(Path.delimiter).filter((d) => !d.includes("node_modules"))
  .map((d) => Path.join(d, "node")).find((f) => Fs.existsSync(f)) ?? process.execPath

const run = (command: string, args: ReadonlyArray<string>, options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = ChildProcess.spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env } })
    let out = ""
    child.stdout.on("data", (d) => out += d)
    child.stderr.on("data", (d) => out += d)
    child.on("exit", (code) => resolve({ code, out }))
  })

const filesUnder = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? filesUnder(Path.join(dir, e.name)) : [Path.join(dir, e.name)])

const specifiers = (source: string) => [...source.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1])

describe("anchord/client, the package", () => {
  let node: TestNode
  let key: string
  beforeAll(async () => {
    // The package: its package.json and dependencies, and dist/ built as the prepare script builds it.
    Fs.mkdirSync(pkg)
    Fs.copyFileSync(Path.join(root, "package.json"), Path.join(pkg, "package.json"))
    Fs.symlinkSync(Path.join(root, "node_modules"), Path.join(pkg, "node_modules"))
    const prepare = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8")).scripts.prepare as string
    expect(prepare).toBe("node scripts/build-sdk.cjs")
    const built = await run(process.execPath, [Path.join(root, "scripts/build-sdk.cjs"), "--outDir", Path.join(pkg, "dist")], { cwd: root })
    expect(built, built.out).toMatchObject({ code: 0 })
    // A consumer project with anchord in its node_modules.
    Fs.mkdirSync(Path.join(consumer, "node_modules/@types"), { recursive: true })
    Fs.symlinkSync(pkg, Path.join(consumer, "node_modules/anchord"))
    Fs.symlinkSync(Path.join(root, "node_modules/@types/node"), Path.join(consumer, "node_modules/@types/node"))
    Fs.writeFileSync(Path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))

    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  }, 120_000)
  afterAll(async () => {
    await node?.stop()
    Fs.rmSync(work, { recursive: true, force: true })
  })

  it("is JavaScript + .d.ts importing only node: modules and OpenZeppelin's Merkle tree, nothing of Effect", () => {
    const files = filesUnder(Path.join(pkg, "dist"))
    expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([])
    const bare = new Set<string>()
    for (const file of files) {
      for (const s of specifiers(Fs.readFileSync(file, "utf8"))) {
        if (s.startsWith(".")) {
          // relative imports stay inside dist/ (the .d.ts name .ts files, which TypeScript maps to their .d.ts)
          const target = Path.resolve(Path.dirname(file), file.endsWith(".d.ts") ? s.replace(/\.ts$/, ".d.ts") : s)
          expect(Fs.existsSync(target), `${file} imports ${s}`).toBe(true)
        } else bare.add(s)
      }
    }
    expect([...bare].sort()).toEqual(["@openzeppelin/merkle-tree", "node:buffer", "node:crypto"])
  })

  it("runs on the machine's own Node against a real node: anchor, get, list, an API error", async () => {
    Fs.writeFileSync(Path.join(consumer, "app.mjs"), `
      import { AnchordClient, AnchordError, verifyBundle, verifyWebhook } from "anchord/client"
      const client = new AnchordClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY })
      const rec = await client.anchor({ from: "consumer" })
      const got = await client.get(rec.recordId)
      const pages = []
      for await (const page of client.list({ limit: 1 })) pages.push(page.records.length)
      const error = await client.proof(rec.recordId).catch((e) => e)
      console.log(JSON.stringify({
        node: process.version, status: got.status, same: got.hash === rec.hash, pages,
        error: { isAnchordError: error instanceof AnchordError, status: error.status, errorCode: error.errorCode },
        functions: [typeof verifyBundle, typeof verifyWebhook]
      }))
    `)
    const r = await run(userNode, ["app.mjs"], { cwd: consumer, env: { BASE_URL: node.baseUrl, API_KEY: key } })
    expect(r.code, r.out).toBe(0)
    const out = JSON.parse(r.out.trim().split("\n").at(-1)!)
    expect(out).toMatchObject({
      status: "QUEUED",
      same: true,
      pages: [1],
      error: { isAnchordError: true, status: 409, errorCode: "NOT_ANCHORED" },
      functions: ["function", "function"]
    })
    console.log(`consumer ran on ${out.node} (${userNode})`)
  }, 60_000)

  it("type-checks in a consumer's strict TypeScript project, without skipLibCheck", async () => {
    Fs.writeFileSync(Path.join(consumer, "tsconfig.json"), JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] },
      files: ["app.ts"]
    }))
    const tsc = Path.join(root, "node_modules/typescript/bin/tsc")
    Fs.writeFileSync(Path.join(consumer, "app.ts"), `
      import { AnchordClient, AnchordError, verifyBundle, type AnchordRecord, type ProofBundle } from "anchord/client"
      const client = new AnchordClient({ baseUrl: "http://127.0.0.1:8080", apiKey: "dcp_test_x" })
      export const record: Promise<AnchordRecord> = client.anchor({ a: 1 }, { chain: "hybrid", metadata: { m: 1 } })
      export const proof: Promise<ProofBundle> = client.proof("x")
      export const valid: boolean = verifyBundle({}).valid
      export const code = (e: unknown) => e instanceof AnchordError ? e.errorCode : undefined
    `)
    const ok = await run(process.execPath, [tsc, "-p", "."], { cwd: consumer })
    expect(ok, ok.out).toMatchObject({ code: 0 })
    // and it does check: a wrong use is an error
    Fs.writeFileSync(Path.join(consumer, "app.ts"), `
      import { AnchordClient } from "anchord/client"
      new AnchordClient({ baseUrl: "x", apiKey: "y" }).anchor({ a: 1 }, { chain: "bitcoin" })
    `)
    const bad = await run(process.execPath, [tsc, "-p", "."], { cwd: consumer })
    expect(bad.code).not.toBe(0)
    expect(bad.out).toMatch(/"bitcoin"/)
  }, 60_000)
})
