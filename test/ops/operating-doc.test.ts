/**
 * docs/operating.md held to the code: its "Upgrades" table names every migration (src/db/migrations),
 * under its own name, and explains every number the list skips; its alerts table names exactly the
 * rules shipped in ops/prometheus/anchord-alerts.yml. A migration or a rule added without its line fails here.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { load } from "js-yaml"
import { describe, expect, it } from "vitest"
import { migrations } from "../../src/db/migrations/index.ts"

const root = resolve(import.meta.dirname, "../..")
const doc = readFileSync(resolve(root, "docs/operating.md"), "utf8")

/** The rows of the first table after `heading`: each row's cells, header and separator left out. */
const tableAfter = (heading: string): Array<Array<string>> => {
  const start = doc.indexOf(`\n${heading}\n`)
  expect(start, heading).toBeGreaterThan(-1)
  const lines = doc.slice(start).split("\n")
  const first = lines.findIndex((l) => l.startsWith("|"))
  const rows: Array<Array<string>> = []
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith("|")) break
    rows.push(line.slice(1, -1).split(" | ").map((c) => c.trim()))
  }
  return rows
}

describe("docs/operating.md", () => {
  it("the Upgrades table has a row for every migration, by its name, and says why a number is skipped", () => {
    const names = Object.keys(migrations)
    const rows = tableAfter("## Upgrades")
    // "0016 record_state" → 0016_record_state; "0001 init, 0002 anchoring, …" → several.
    const documented = new Map<string, string>()
    for (const [first, what] of rows) {
      for (const m of first!.matchAll(/\b(\d{4})(?: ([a-z0-9_]+))?/g)) documented.set(m[1]!, m[2] === undefined ? `${m[1]}: ${what}` : `${m[1]}_${m[2]}`)
    }
    for (const name of names) expect(documented.get(name.slice(0, 4)), `a row for ${name}`).toBe(name)
    const last = Math.max(...names.map((n) => Number(n.slice(0, 4))))
    for (let n = 1; n <= last; n++) {
      const number = String(n).padStart(4, "0")
      if (names.some((name) => name.startsWith(number))) continue
      expect(documented.get(number), `migration number ${number} is skipped: the table says why`).toMatch(/none/)
    }
    for (const number of documented.keys()) expect(Number(number), `${number} is past the last migration`).toBeLessThanOrEqual(last)
  })

  it("the alerts table names exactly the rules in ops/prometheus/anchord-alerts.yml", () => {
    const rules = load(readFileSync(resolve(root, "ops/prometheus/anchord-alerts.yml"), "utf8")) as {
      groups: Array<{ rules: Array<{ alert: string }> }>
    }
    const shipped = rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort()
    const rows = tableAfter("## Metrics, alerts and traces")
    const documented = rows.flatMap((cells) => [...cells[1]!.matchAll(/`(Anchord\w+)`/g)].map((m) => m[1]!)).sort()
    expect(documented).toEqual(shipped)
  })

  it("says HTTPS is HTTP/1.1 only, as the node and docs/tls.md do", () => {
    expect(doc).not.toMatch(/HTTP\/2 by ALPN/)
    expect(doc).toMatch(/HTTP\/1\.1 only/)
  })
})
