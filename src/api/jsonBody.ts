/**
 * JSON request bodies, parsed strictly (RFC 8259 + the I-JSON rules JCS hashing needs: duplicate
 * member names, lone surrogates, unsafe integers, depth; see src/canonical/strictJson.ts) and then
 * decoded by the endpoint's schema, unknown members refused.
 *
 * Why not HttpApi's default JSON payloads: they go through `JSON.parse`, which on Node 24 can read an
 * escaped member name wrongly (nodejs/node#63785, docs/canonicalization.md) and accepts duplicates,
 * so a hashed or stored value could differ from what the client sent. `JsonBody(S)` is a text payload
 * of media type application/json whose schema parses with our parser; the OpenAPI document shows the
 * body as the JSON schema of `S` (`jsonBodiesInOpenApi`), which is what it is on the wire.
 */
import { Effect, Schema, SchemaGetter, SchemaIssue, SchemaTransformation } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { parseStrictJson, StrictJsonError } from "../canonical/strictJson.ts"
import { excerpt } from "../excerpt.ts"

/** Marks the issue of a body that is not JSON at all (400 INVALID_JSON, not VALIDATION_ERROR). */
export const JSON_SYNTAX = "anchord/jsonSyntax"

/**
 * How many characters of a message about one issue the client sees (src/http/schemaMessages.ts): a
 * backstop, above what the strict parser's messages reach (each quoted input at most 64 characters,
 * paths at most 240), so they are never cut and both ingest paths answer the same.
 */
export const ISSUE_MESSAGE_MAX = 480

/**
 * The answer to a body the strict parser refused, the same on the HttpApi endpoints and the gateway's
 * fast path (src/app/gateway.ts): 400 INVALID_JSON for syntax, VALIDATION_ERROR for the I-JSON rules.
 */
export const bodyRejection = (error: StrictJsonError): { readonly syntax: boolean; readonly message: string } => {
  const syntax = error.reason === "syntax"
  return {
    syntax,
    message: excerpt(syntax ? `Request body is not valid JSON: ${error.message}` : `Request body rejected: ${error.message}`, ISSUE_MESSAGE_MAX)
  }
}

const parse = (text: string): Effect.Effect<unknown, SchemaIssue.Issue> => {
  try {
    return Effect.succeed(parseStrictJson(text))
  } catch (error) {
    if (!(error instanceof StrictJsonError)) return Effect.die(error)
    const { syntax, message } = bodyRejection(error)
    return Effect.fail(new SchemaIssue.InvalidValue({ message, [JSON_SYNTAX]: syntax } as never))
  }
}

/** Targets of `JsonBody`, by the identifier of the text schema standing for them in the document. */
const targets = new Map<string, Schema.Top>()

/**
 * A JSON request body parsed strictly and decoded by `schema` (which must carry an `identifier`).
 * Members the schema does not name are refused (400 VALIDATION_ERROR naming them, SPEC 3.3); a schema
 * that takes any member (PATCH: a rest record, answered 422 IMMUTABLE_FIELD by its handler) keeps them.
 */
export const JsonBody = <S extends Schema.Top & { readonly DecodingServices: never; readonly EncodingServices: never }>(schema: S) => {
  // One text schema per target: endpoints sharing a body (`{}`) share its component in the document,
  // instead of `EmptyJsonText_1`, `_2`… that the transform below would not recognize.
  const known = made.get(schema)
  if (known !== undefined) return known as ReturnType<typeof makeJsonBody<S>>
  const body = makeJsonBody(schema)
  made.set(schema, body)
  return body
}

const made = new WeakMap<Schema.Top, unknown>()

const makeJsonBody = <S extends Schema.Top & { readonly DecodingServices: never; readonly EncodingServices: never }>(schema: S) => {
  // A schema with checks keeps its annotations on the last check.
  const ast = schema.ast as { readonly annotations?: { readonly identifier?: unknown };
    readonly checks?: ReadonlyArray<{ readonly annotations?: { readonly identifier?: unknown } }> }
  const identifier = ast.checks?.at(-1)?.annotations?.identifier ?? ast.annotations?.identifier
  if (typeof identifier !== "string") throw new Error("JsonBody: the body schema needs an identifier")
  targets.set(`${identifier}JsonText`, schema)
  const decode = Schema.decodeUnknownEffect(schema, {
    onExcessProperty: "error",
    errors: "all"
  })
  const encode = Schema.encodeUnknownEffect(schema)
  const transformation = new SchemaTransformation.Transformation<S["Type"], string>(
    SchemaGetter.transformEffect((text: string) => Effect.flatMap(parse(text), (value) => Effect.mapError(decode(value), (e) => e.issue))),
    SchemaGetter.transformEffect((value: S["Type"]) =>
      Effect.mapBoth(encode(value), { onFailure: (e) => e.issue, onSuccess: (encoded) => JSON.stringify(encoded) })
    )
  )
  return Schema.String.annotate({ identifier: `${identifier}JsonText` }).pipe(
    Schema.decodeTo(Schema.toType(schema), transformation as never),
    HttpApiSchema.asText({ contentType: "application/json" })
  )
}

/**
 * The OpenAPI document as clients see the wire: every `JsonBody` request body is its target's JSON
 * schema (the text stand-ins are replaced, their components dropped, the targets' components added).
 */
export const jsonBodiesInOpenApi = (spec: Record<string, any>): Record<string, any> => {
  // Only bodies of operations in this document (endpoints left out of it, like the console's, have
  // bodies too: their schemas would be unused components).
  const referenced = new Set<string>()
  for (const item of Object.values(spec.paths ?? {})) {
    for (const op of Object.values(item as Record<string, any>)) {
      const ref: unknown = op?.requestBody?.content?.["application/json"]?.schema?.$ref
      if (typeof ref === "string") referenced.add(ref.replace("#/components/schemas/", ""))
    }
  }
  const used = [...targets.entries()].filter(([name]) => referenced.has(name))
  if (used.length === 0) return spec
  // The targets' JSON schemas, as the generator makes them for an ordinary JSON body.
  let group: any = HttpApiGroup.make("bodies")
  used.forEach(([, schema], i) => {
    group = group.add(HttpApiEndpoint.post(`b${i}`, `/b${i}`, { payload: schema as never }))
  })
  const bodies = OpenApi.fromApi(HttpApi.make("bodies").add(group as never))
  const schemas: Record<string, unknown> = { ...spec.components.schemas }
  for (const [name] of used) delete schemas[name]
  for (const [name, definition] of Object.entries(bodies.components.schemas)) if (!(name in schemas)) schemas[name] = definition
  const bodyOf = new Map(used.map(([name], i) => [name, (bodies.paths[`/b${i}`] as any).post.requestBody.content["application/json"].schema]))
  const paths: Record<string, unknown> = {}
  for (const [path, item] of Object.entries(spec.paths)) {
    const out: Record<string, unknown> = { ...(item as Record<string, unknown>) }
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      const media = op?.requestBody?.content?.["application/json"]
      const ref: unknown = media?.schema?.$ref
      const name = typeof ref === "string" ? ref.replace("#/components/schemas/", "") : undefined
      const body = name === undefined ? undefined : bodyOf.get(name)
      if (body === undefined) continue
      out[method] = { ...op, requestBody: { ...op.requestBody, content: { ...op.requestBody.content, "application/json": { ...media, schema: body } } } }
    }
    paths[path] = out
  }
  return { ...spec, paths, components: { ...spec.components, schemas } }
}

/** Whether a schema issue says the body was not JSON at all. */
export const isJsonSyntaxIssue = (issue: SchemaIssue.Issue): boolean => {
  let found = false
  const visit = (i: SchemaIssue.Issue): void => {
    if (found) return
    if (i._tag === "InvalidValue" && (i.annotations as Record<string, unknown> | undefined)?.[JSON_SYNTAX] === true) {
      found = true
      return
    }
    for (const key of ["issue", "issues"] as const) {
      const child = (i as any)[key]
      if (Array.isArray(child)) child.forEach(visit)
      else if (child !== undefined && typeof child === "object") visit(child)
    }
  }
  visit(issue)
  return found
}
