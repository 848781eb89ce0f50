// Builds `anchord/client` (src/sdk) to dist/ with tsc (tsconfig.sdk.json): the "prepare" script, so
// `npm install` in a clone builds it (docs/sdk.md). Extra arguments go to tsc (tests pass --outDir).
// An install without dev dependencies (--omit=dev) has no TypeScript: it says so and skips, rather
// than failing the whole install of a node that does not need the SDK.
"use strict"
const path = require("node:path")
const { execFileSync } = require("node:child_process")

const root = path.resolve(__dirname, "..")
let tsc
try {
  tsc = require.resolve("typescript/bin/tsc", { paths: [root] })
} catch {
  console.log("build-sdk: typescript is not installed (an install without dev dependencies): anchord/client (dist/) not built")
  process.exit(0)
}
execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.sdk.json"), ...process.argv.slice(2)], { cwd: root, stdio: "inherit" })
