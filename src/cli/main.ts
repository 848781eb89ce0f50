#!/usr/bin/env node
/**
 * The `anchord` entry point (SPEC 8). The commands live in ./commands.ts; `verify` is the auditor's
 * command and must start fast without a database or a node, so it loads only src/verify/
 * (not the server, the database or the chain writers).
 */
import * as Module from "node:module"

// V8's compile cache (under the OS temp dir unless NODE_COMPILE_CACHE says where): later starts
// skip parsing and compiling the modules loaded below.
Module.enableCompileCache?.()

if (process.argv[2] === "verify") await import("../verify/main.ts")
else await import("./commands.ts")
