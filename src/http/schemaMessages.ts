/** Human messages for schema failures that name the field: "records[2].data: Expected object". */
import { SchemaIssue } from "effect"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

type PathSegment = PropertyKey | { readonly key: PropertyKey }

export const describeIssue = (issue: SchemaIssue.Issue, where = ""): string => {
  const issues = formatter(issue).issues as ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PathSegment> }>
  if (issues.length === 0) return "does not match the schema"
  return issues.slice(0, 5).map((i) => {
    const path = (i.path ?? []).map((p) => typeof p === "object" ? String(p.key) : String(p)).join(".")
    const at = where + path
    return at === "" ? i.message : `${at}: ${i.message}`
  }).join("; ")
}
