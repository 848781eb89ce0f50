#!/usr/bin/env node
// `npx anchord …` (package.json "bin"). The CLI is TypeScript run by Node's type stripping, which
// Node 20 lacks: there this launcher runs it with the project's Node 24 (the dev dependency `node`,
// node_modules/node/bin/node), passing signals on and exiting with its code. Plain ESM, no deps.
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const entry = join(root, "src", "cli", "main.ts")
const [major, minor] = process.versions.node.split(".").map(Number)
// Type stripping is on by default from Node 22.18 / 23.6.
const stripsTypes = major > 23 || (major === 23 && minor >= 6) || (major === 22 && minor >= 18)

if (stripsTypes) {
  await import(pathToFileURL(entry).href)
} else {
  const node = [join(root, "node_modules", "node", "bin", "node"), join(root, "node_modules", ".bin", "node")]
    .find((p) => existsSync(p))
  if (node === undefined) {
    console.error(`anchord needs Node >= 22.18 to run TypeScript; this is ${process.version} and the project's Node 24 ` +
      `(dev dependency "node") is not installed: run \`npm install\` in ${root}`)
    process.exit(1)
  }
  const child = spawn(node, [entry, ...process.argv.slice(2)], { stdio: "inherit" })
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal))
  child.on("exit", (code, signal) => {
    if (signal !== null) process.kill(process.pid, signal)
    else process.exit(code ?? 1)
  })
}
