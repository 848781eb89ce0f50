/**
 * `anchord verify --tsr` put together (docs/verifying.md): the token's own checks (./timestamp.ts), then
 * its anchor: the record's proof bundle (a file, or the node's `GET /v1/timestamp/{serial}`) must be the
 * token's record (`tsa.record-hash`) and verify against the chain exactly as `anchord verify <bundle>`.
 * Loaded lazily by ./command.ts.
 */
import { readFileSync } from "node:fs"
import * as Effect from "effect/Effect"
import { excerpt } from "../excerpt.ts"
import { readInput } from "./input.ts"
import { type Check, exitCodeOf, outcomeOf, type Report } from "./report.ts"
import { checkToken, proofOfTimestampView, readCaPems, recordHashCheck, type TokenFacts } from "./timestamp.ts"
import { verifyInput, type VerifyOptions } from "./verify.ts"

export interface TimestampArgs {
  readonly tsr: string
  readonly data: string | undefined
  readonly ca: string | undefined
  readonly bundleFile: string | undefined
  readonly node: string | undefined
  readonly apiKey: string | undefined
  readonly readJson: (path: string) => unknown
  readonly verify: VerifyOptions
  readonly timeoutMs: number
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** GET /v1/timestamp/{serial}: the proof bundle, or why there is none (an `error` check: exit 2). */
const fetchBundle = (node: string, apiKey: string | undefined, serial: string, timeoutMs: number) =>
  Effect.tryPromise({
    try: async () => {
      if (apiKey === undefined) throw new Error("--node needs the token account's API key: --api-key or ANCHORD_API_KEY")
      const url = `${node.replace(/\/+$/, "")}/v1/timestamp/${serial}`
      const r = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(timeoutMs) })
      const text = await r.text()
      let json: any
      try {
        json = JSON.parse(text)
      } catch {
        throw new Error(`GET ${url}: HTTP ${r.status}, not JSON`)
      }
      if (r.status !== 200) {
        throw new Error(`GET ${url}: HTTP ${r.status} ${excerpt(String(json?.errorCode ?? ""))}: ${excerpt(String(json?.error ?? ""), 200)}`)
      }
      return proofOfTimestampView(json)
    },
    catch: errorText
  })

/** The report, or why nothing could be checked (unreadable input: exit 2). */
export type TimestampOutcome = { readonly error: string } | Report

export const verifyTimestamp = Effect.fn("verify.timestamp")(function*(args: TimestampArgs): Effect.fn.Return<TimestampOutcome> {
  let tsr: Uint8Array
  let data: Uint8Array
  let trusted
  let bundleJson: unknown
  try {
    if (args.data === undefined) throw new Error("--tsr needs --data <the time-stamped file>")
    if (args.ca === undefined) throw new Error("--tsr needs --ca <PEM file of the TSA's root CA> (the dev root: <data dir>/tsa/ca.pem)")
    if (args.bundleFile !== undefined && args.node !== undefined) throw new Error("give the proof bundle's file or --node, not both")
    const read = (flag: string, path: string) => {
      try {
        return readFileSync(path)
      } catch (e) {
        throw new Error(`${flag} ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? errorText(e)})`, { cause: e })
      }
    }
    tsr = read("--tsr", args.tsr)
    data = read("--data", args.data)
    trusted = readCaPems(read("--ca", args.ca).toString("utf8"), args.ca)
    if (args.bundleFile !== undefined) {
      const json = args.readJson(args.bundleFile)
      bundleJson = proofOfTimestampView(json) ?? json
    }
  } catch (e) {
    return { error: errorText(e) }
  }
  const token = yield* Effect.promise(() => checkToken(tsr, data, trusted))
  const checks: Array<Check> = [...token.checks]
  const facts = token.facts
  let recordId: string | null = null
  let hash = facts?.recordHash ?? ""
  const perAnchor: Array<Report["anchors"][number]> = []

  if (facts !== undefined) {
    // The anchor: the bundle of the token's record, checked as `anchord verify <bundle>` checks it.
    let proof: unknown = bundleJson
    if (proof === undefined && args.node !== undefined) {
      const fetched = yield* Effect.result(fetchBundle(args.node, args.apiKey, facts.serial, args.timeoutMs))
      if (fetched._tag === "Failure") checks.push({ id: "tsa.anchor", status: "error", message: fetched.failure })
      else proof = fetched.success
    } else if (proof === undefined) {
      checks.push({
        id: "tsa.anchor",
        status: "error",
        message: `no proof bundle: give the file of GET /v1/timestamp/${facts.serial} (or its proof), or --node <url>; the token alone is not the anchor`
      })
    }
    if (proof !== undefined) {
      let input
      try {
        input = readInput(proof)
      } catch (e) {
        checks.push({ id: "tsa.anchor", status: "error", message: `the proof bundle: ${errorText(e)}` })
      }
      if (input !== undefined) {
        checks.push(recordHashCheck(facts, input.bundle.hash))
        recordId = input.bundle.recordId ?? null
        hash = input.bundle.hash
        const report = yield* verifyInput({ ...input, hasData: false }, { ...args.verify, data: undefined })
        // "no data to hash" does not apply: the data was hashed against the token, and tsa.record-hash ties the bundle to it.
        checks.push(...report.checks.filter((c) => !(c.id === "hash" && c.status === "skip")))
        const recordLevel = checks.filter((c) => c.networkId === undefined)
        for (const a of report.anchors) {
          perAnchor.push({ ...a, outcome: outcomeOf([...recordLevel, ...checks.filter((c) => c.networkId === a.networkId)]) })
        }
      }
    }
  }
  const outcome = outcomeOf(checks)
  return {
    outcome,
    exitCode: exitCodeOf(outcome),
    recordId,
    hash,
    hashSource: "data",
    input: "timestamp-token",
    timestamp: facts,
    anchors: perAnchor,
    checks
  } satisfies Report & { readonly timestamp: TokenFacts | undefined }
})
