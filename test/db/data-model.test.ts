/**
 * docs/data-model.md against the live schema: a fresh database migrated by every migration, and PostgreSQL's
 * catalog compared with the page's `###` headings (tables, views, functions, triggers, sequences) and the
 * diagram's entities. An object the page misses, or one it names that the schema no longer has, fails here, so
 * the page cannot drift from the migrations.
 *   npx vitest run test/db/data-model.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { beforeAll } from "vitest"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"

const PAGE = resolve(import.meta.dirname, "../../docs/data-model.md")

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

/** The `### \`name\`` headings of the page's `## <section>`. */
const documented = (page: string, section: string): Array<string> => {
  const start = page.indexOf(`\n## ${section}\n`)
  if (start < 0) return []
  const end = page.indexOf("\n## ", start + 1)
  const body = page.slice(start, end < 0 ? undefined : end)
  return [...body.matchAll(/^### `([a-z0-9_]+)`/gm)].map((m) => m[1]!).sort()
}

/** The text under `### \`name\`` in the page's `## <section>`, up to the next heading. */
const entry = (page: string, section: string, name: string): string => {
  const start = page.indexOf(`\n## ${section}\n`)
  const at = page.indexOf(`\n### \`${name}\``, start)
  if (start < 0 || at < 0) return ""
  const end = page.slice(at + 1).search(/\n##/)
  return page.slice(at, end < 0 ? undefined : at + 1 + end)
}

/** The entities the Mermaid diagram declares (`name {`). */
const diagrammed = (page: string): Array<string> => {
  const block = /```mermaid\n([\s\S]*?)```/.exec(page)?.[1] ?? ""
  return [...block.matchAll(/^\s+([a-z0-9_]+) \{$/gm)].map((m) => m[1]!).sort()
}

/** What one side has and the other lacks, named, so a failure says what to write or remove. */
const compare = (what: string, live: ReadonlyArray<string>, page: ReadonlyArray<string>) => {
  const missing = live.filter((n) => !page.includes(n))
  const gone = page.filter((n) => !live.includes(n))
  assert.deepStrictEqual({ [`${what} not in docs/data-model.md`]: missing, [`${what} in docs/data-model.md, not in the schema`]: gone }, {
    [`${what} not in docs/data-model.md`]: [],
    [`${what} in docs/data-model.md, not in the schema`]: []
  })
}

describe("docs/data-model.md", () => {
  it.effect("names every table, view, function, trigger and sequence of the migrated schema, and nothing else", () =>
    Effect.gen(function*() {
      yield* migrateTo(url, Object.keys(migrations))
      const sql = yield* SqlClient.SqlClient
      const names = (rows: ReadonlyArray<{ readonly name: string }>) => rows.map((r) => r.name).sort()
      const relations = (kinds: ReadonlyArray<string>) =>
        Effect.map(
          sql<{ name: string }>`
            SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind::text IN ${sql.in(kinds)}`,
          names
        )
      const tables = yield* relations(["r", "p"])
      const views = yield* relations(["v", "m"])
      const functions = names(
        yield* sql<{ name: string }>`
          SELECT DISTINCT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'public'`
      )
      const triggers = names(
        yield* sql<{ name: string }>`
          SELECT t.tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND NOT t.tgisinternal`
      )
      // Sequences of their own: not the ones a bigserial column owns.
      const sequences = names(
        yield* sql<{ name: string }>`
          SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind = 'S'
            AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i'))`
      )

      const page = readFileSync(PAGE, "utf8")
      compare("tables", tables, documented(page, "Tables"))
      compare("tables (diagram)", tables, diagrammed(page))
      compare("views", views, documented(page, "Views"))
      compare("functions", functions, documented(page, "Functions"))
      compare("triggers", triggers, documented(page, "Triggers"))
      compare("sequences", sequences, documented(page, "Sequences"))
      // Each trigger says why the database holds its rule (issue 28).
      assert.deepStrictEqual(triggers.filter((t) => !entry(page, "Triggers", t).includes("**Why here:**")), [])
    }).pipe(Effect.provide(Layer.suspend(() => pgClientLayer(Redacted.make(url))))))
})
