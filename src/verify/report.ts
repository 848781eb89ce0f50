/** The verification report: each check with its outcome and why; the verdict and exit code. */

/**
 * - `pass`: the check holds.
 * - `fail`: the check was made and does not hold (the record is not verified).
 * - `error`: the check could not be made (RPC unreachable, no identity given, ...).
 * - `skip`: not applicable (e.g. no data to hash, or an earlier failure makes it meaningless).
 */
export type CheckStatus = "pass" | "fail" | "error" | "skip"

export interface Check {
  /** Stable id, e.g. `hash`, `merkle-proof`, `evm.contract-verify`. */
  readonly id: string
  /** The anchor it concerns (`networkId`), absent for record-level checks. */
  readonly networkId?: string | undefined
  readonly status: CheckStatus
  readonly message: string
}

export type Outcome = "verified" | "not-verified" | "could-not-check"

export interface Report {
  readonly outcome: Outcome
  /** 0 verified, 1 not verified, 2 could not check. */
  readonly exitCode: 0 | 1 | 2
  readonly recordId: string | null
  readonly hash: string
  /** Where the hash came from: recomputed from the data, or taken as given (the bundle's; a receipt's `--hash`). */
  readonly hashSource: "data" | "bundle"
  readonly input: string
  readonly anchors: ReadonlyArray<{ readonly chainType: string; readonly networkId: string; readonly outcome: Outcome }>
  readonly checks: ReadonlyArray<Check>
  /** `--tsr`: what the RFC 3161 token says (src/verify/timestamp.ts). */
  readonly timestamp?: {
    readonly serial: string
    readonly genTime: string
    readonly hashAlgorithm: string
    readonly messageImprint: string
  } | undefined
}

export const outcomeOf = (checks: ReadonlyArray<Check>): Outcome =>
  checks.some((c) => c.status === "fail")
    ? "not-verified"
    : checks.some((c) => c.status === "error")
    ? "could-not-check"
    : "verified"

export const exitCodeOf = (o: Outcome): 0 | 1 | 2 => o === "verified" ? 0 : o === "not-verified" ? 1 : 2

/** The report of an input that names no record (a receipt, a tlog-proof): its checks, about the one anchor it names. */
export const reportOfChecks = (
  input: string,
  hash: { readonly hash: string; readonly hashSource: Report["hashSource"] },
  checks: ReadonlyArray<Check>,
  anchor: { readonly chainType: string; readonly networkId: string } | undefined
): Report => {
  const outcome = outcomeOf(checks)
  return {
    outcome,
    exitCode: exitCodeOf(outcome),
    recordId: null,
    hash: hash.hash,
    hashSource: hash.hashSource,
    input,
    anchors: anchor === undefined ? [] : [{ ...anchor, outcome }],
    checks
  }
}

const MARK: Record<CheckStatus, string> = { pass: "PASS", fail: "FAIL", error: "ERROR", skip: "skip" }

/** Human-readable report (the CLI's default output). */
export const formatReport = (r: Report): string => {
  const lines: Array<string> = []
  if (r.timestamp !== undefined) {
    lines.push(
      `time-stamp token serial ${r.timestamp.serial}  genTime ${r.timestamp.genTime}  imprint ${r.timestamp.hashAlgorithm}:${r.timestamp.messageImprint}`
    )
  }
  if (r.input === "timestamp-token") lines.push(`record ${r.recordId ?? "(no bundle)"}  hash ${r.hash || "(none)"}`)
  else {lines.push(
      `record ${r.recordId ?? "(no id)"}  hash ${r.hash}  (input: ${r.input}; hash ${
        r.hashSource === "data"
          ? "recomputed from the data"
          : r.input === "cose-receipt" || r.input === "tlog-proof"
          ? "as given with --hash, not recomputed"
          : "as stated in the bundle"
      })`
    )}
  let current: string | undefined = "\u0000"
  for (const c of r.checks) {
    if (c.networkId !== current) {
      current = c.networkId
      lines.push(current === undefined ? (r.input === "timestamp-token" ? "token and record:" : "record:") : `anchor ${current}:`)
    }
    lines.push(`  ${MARK[c.status].padEnd(5)} ${c.id.padEnd(24)} ${c.message}`)
  }
  const offline = r.checks.some((c) => c.status === "skip" && c.id.endsWith(".chain"))
  const verdict = r.outcome === "verified"
    ? offline ? "CONSISTENT OFFLINE (hash and Merkle proof only; no chain was asked)" : "VERIFIED"
    : r.outcome === "not-verified"
    ? "NOT VERIFIED"
    : "COULD NOT CHECK (nothing failed, but not every check could be made)"
  lines.push(`${verdict} (exit ${r.exitCode})`)
  return lines.join("\n")
}
