// The layering of docs/architecture.md, checked on the source: no folder under src/ imports a folder
// that imports it back (directly or around a loop), and http/ stays a toolkit without domain imports.
//   npx vitest run test/architecture/layers.test.ts
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const src = resolve(import.meta.dirname, "../../src")

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : /\.(m?ts|m?js)$/.test(name) ? [path] : []
  })

// A file belongs to its first folder below src/; a file directly in src/ is a unit of its own.
const unitOf = (file: string) => relative(src, file).split("/")[0]!

/** Folder → folders it imports, each edge with one importing line as evidence. */
const folderImports = () => {
  const edges = new Map<string, Map<string, string>>()
  for (const file of files(src)) {
    const text = readFileSync(file, "utf8")
    for (const m of text.matchAll(/(?:import|export)\s[^"'`]*?from\s*["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
      const spec = m[1] ?? m[2]!
      const target = resolve(dirname(file), spec)
      if (!target.startsWith(src + "/")) continue
      const [a, b] = [unitOf(file), unitOf(target)]
      if (a === b) continue
      const out = edges.get(a) ?? new Map<string, string>()
      if (!out.has(b)) out.set(b, `${relative(src, file)} imports ${spec}`)
      edges.set(a, out)
    }
  }
  return edges
}

/** Strongly connected groups of more than one folder (Tarjan): each is a cycle. */
const cycles = (edges: Map<string, Map<string, string>>) => {
  let next = 0
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: Array<string> = [], on = new Set<string>()
  const groups: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    on.add(v)
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const group: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        group.push(w)
      } while (w !== v)
      if (group.length > 1) groups.push(group.sort())
    }
  }
  for (const v of new Set([...edges.keys(), ...[...edges.values()].flatMap((m) => [...m.keys()])])) if (!index.has(v)) visit(v)
  return groups
}

describe("layering (docs/architecture.md)", () => {
  const edges = folderImports()

  it("no folder under src/ imports a folder that imports it back", () => {
    const found = cycles(edges).map((group) => group.flatMap((a) => group.filter((b) => edges.get(a)?.has(b)).map((b) => edges.get(a)!.get(b)!)))
    expect(found).toEqual([])
  })

  it("the check sees a cycle when there is one", () => {
    const looped = new Map(edges)
    looped.set("api", new Map([...(edges.get("api") ?? []), ["records", "made up for this test"]]))
    expect(cycles(looped).some((g) => g.includes("api") && g.includes("records"))).toBe(true)
  })

  it("http/ is a toolkit: it imports only the wire contract and leaf files", () => {
    const allowed = new Set(["api", "config.ts", "version.ts", "logging.ts", "excerpt.ts"])
    expect([...(edges.get("http")?.keys() ?? [])].filter((b) => !allowed.has(b))).toEqual([])
  })

  it("api/ (the wire contract) and canonical/ import no capability", () => {
    // excerpt.ts: the leaf that bounds how much of the input a message quotes; version.ts: the leaf with the
    // package's version (the OpenAPI document's info.version).
    expect([...(edges.get("canonical")?.keys() ?? [])].filter((b) => b !== "excerpt.ts")).toEqual([])
    expect([...(edges.get("api")?.keys() ?? [])].filter((b) => b !== "canonical" && b !== "excerpt.ts" && b !== "version.ts")).toEqual([])
  })
})
