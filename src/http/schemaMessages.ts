/**
 * Human messages for schema failures that name the field: "records[2].data: Expected object". At most
 * five issues, each quoting at most a bounded excerpt of what the client sent.
 */
import { SchemaIssue } from "effect"
import { excerpt } from "../excerpt.ts"
import { ISSUE_MESSAGE_MAX } from "../api/jsonBody.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

type PathSegment = PropertyKey | { readonly key: PropertyKey }

export const describeIssue = (issue: SchemaIssue.Issue, where = ""): string => {
  const issues = formatter(issue).issues as ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PathSegment> }>
  if (issues.length === 0) return "does not match the schema"
  return issues.slice(0, 5).map((i) => {
    // Member names come from the input (an unknown member is named): each is quoted bounded, and so
    // is the message (src/excerpt.ts).
    const path = (i.path ?? []).map((p) => excerpt(typeof p === "object" ? String(p.key) : String(p))).join(".")
    const at = where + path
    return at === "" ? excerpt(i.message, ISSUE_MESSAGE_MAX) : `${at}: ${excerpt(i.message, ISSUE_MESSAGE_MAX)}`
  }).join("; ")
}
