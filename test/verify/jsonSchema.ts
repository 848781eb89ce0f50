/**
 * A small JSON Schema (2020-12) checker for the keywords docs/proof-bundle.schema.json uses:
 * $ref (local), type, const, enum, pattern, minLength, minimum, required, properties, items,
 * allOf, if/then. Returns the list of violations (empty = valid).
 */
type S = Record<string, any>

const typeOf = (v: unknown) => v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v

export const validate = (root: S, value: unknown): Array<string> => {
  const errors: Array<string> = []
  const resolve = (s: S): S => s.$ref ? resolve(s.$ref.split("/").slice(1).reduce((o: S, k: string) => o[k], root)) : s
  const check = (schema: S, v: unknown, path: string, out: Array<string>) => {
    const s = resolve(schema)
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? s.type : [s.type]
      const t = typeOf(v)
      if (!types.includes(t) && !(t === "integer" && types.includes("number"))) return void out.push(`${path}: type ${t}, expected ${types.join("|")}`)
    }
    if ("const" in s && JSON.stringify(s.const) !== JSON.stringify(v)) out.push(`${path}: expected ${JSON.stringify(s.const)}`)
    if (s.enum && !s.enum.includes(v)) out.push(`${path}: not one of ${s.enum.join(", ")}`)
    if (typeof v === "string") {
      if (s.pattern && !new RegExp(s.pattern).test(v)) out.push(`${path}: ${JSON.stringify(v)} does not match ${s.pattern}`)
      if (s.minLength !== undefined && v.length < s.minLength) out.push(`${path}: shorter than ${s.minLength}`)
    }
    if (typeof v === "number" && s.minimum !== undefined && v < s.minimum) out.push(`${path}: below ${s.minimum}`)
    if (Array.isArray(v) && s.items) v.forEach((x, i) => check(s.items, x, `${path}[${i}]`, out))
    if (typeOf(v) === "object") {
      const o = v as Record<string, unknown>
      for (const k of s.required ?? []) if (!(k in o)) out.push(`${path}.${k}: required`)
      for (const [k, sub] of Object.entries(s.properties ?? {})) if (k in o) check(sub as S, o[k], `${path}.${k}`, out)
    }
    for (const sub of s.allOf ?? []) {
      if (sub.if) {
        const probe: Array<string> = []
        check(sub.if, v, path, probe)
        if (probe.length === 0 && sub.then) check(sub.then, v, path, out)
      } else check(sub, v, path, out)
    }
  }
  check(root, value, "$", errors)
  return errors
}
