/** One line of doctor's report, and its three kinds. */
export type CheckStatus = "ok" | "warn" | "fatal"

/** One line of the report (`--json`: one element of the array). */
export interface CheckResult {
  readonly check: string
  readonly status: CheckStatus
  readonly message: string
  /** What to do; empty when there is nothing to do. */
  readonly fix: string
}

export const ok = (check: string, message: string): CheckResult => ({ check, status: "ok", message, fix: "" })
export const warn = (check: string, message: string, fix: string): CheckResult => ({ check, status: "warn", message, fix })
export const fatal = (check: string, message: string, fix: string): CheckResult => ({ check, status: "fatal", message, fix })
