// Runs after `npm install` (root lifecycle script).
//
// npm checks optional dependencies' `engines` against the Node that runs npm itself. On machines
// whose own `node` is v20, npm silently skips platform binaries that declare `engines: >=22`
// (Hardhat's EDR, for one), although every project script runs on Node 24 (dev dependency `node`).
// This script finds optional packages in package-lock.json that fit this OS/CPU/libc, are missing
// from node_modules, and unpacks them from the npm registry (through npm's own cache).
"use strict"
const fs = require("node:fs")
const path = require("node:path")
const os = require("node:os")
const { execFileSync } = require("node:child_process")

const root = path.resolve(__dirname, "..")
const lockPath = path.join(root, "package-lock.json")
if (!fs.existsSync(lockPath)) process.exit(0)
const lock = JSON.parse(fs.readFileSync(lockPath, "utf8"))

const libc = (() => {
  if (process.platform !== "linux") return undefined
  const report = process.report && process.report.getReport()
  return report && report.header && report.header.glibcVersionRuntime ? "glibc" : "musl"
})()
const fits = (list, value) => {
  if (!Array.isArray(list) || list.length === 0) return true
  if (list.some((v) => v === `!${value}`)) return false
  const positive = list.filter((v) => !v.startsWith("!"))
  return positive.length === 0 || positive.includes(value)
}

const missing = []
for (const [key, meta] of Object.entries(lock.packages ?? {})) {
  if (!key.startsWith("node_modules/") || !meta.optional) continue
  if (!meta.os && !meta.cpu) continue // platform binaries only
  if (!fits(meta.os, process.platform) || !fits(meta.cpu, process.arch)) continue
  if (libc !== undefined && !fits(meta.libc, libc)) continue
  // only packages whose parent is installed (the lock lists every platform's binaries)
  const dir = path.join(root, key)
  if (fs.existsSync(path.join(dir, "package.json"))) continue
  const name = key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length)
  missing.push({ name, version: meta.version, dir })
}

for (const { name, version, dir } of missing) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "anchord-postinstall-"))
  try {
    const out = execFileSync("npm", ["pack", `${name}@${version}`, "--silent", "--pack-destination", tmp], {
      cwd: tmp,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"]
    }).trim().split("\n").pop()
    fs.mkdirSync(dir, { recursive: true })
    execFileSync("tar", ["xzf", path.join(tmp, out), "--strip-components=1", "-C", dir])
    console.log(`postinstall: installed platform package ${name}@${version}`)
  } catch (error) {
    console.warn(`postinstall: could not install ${name}@${version}: ${error.message}`)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}
