/**
 * `anchord doctor --webhook-test-url`: the URL checked by the egress policy as a live key's URL, then
 * one unsigned test POST sent the way deliveries are sent (src/webhooks/sender.ts `attempt`): the name
 * resolved by the node's resolver and the policy applied again to the address actually connected to,
 * so a DNS answer that changes between the check and the connection (rebinding) reaches nothing.
 */
import { Effect } from "effect"
import { attempt, destroyAgents, loadExtraCa, makeAgents } from "../webhooks/sender.ts"
import { checkWebhookUrl, EMPTY_ALLOWLIST, parseAllowlist, WebhookResolver } from "../webhooks/urlPolicy.ts"
import { type CheckResult, fatal, ok, warn } from "./checks.ts"

const NAME = "webhook-target"
const UNREACHABLE = "check the receiver is up and reachable from this machine"
const POLICY = "use a public HTTPS receiver, or open its range with WEBHOOK_ALLOW_PRIVATE"

export interface WebhookTargetOptions {
  /** WEBHOOK_ALLOW_PRIVATE as set (webhook-egress reports it when it does not parse). */
  readonly allowPrivate: string | undefined
  /** WEBHOOK_CA_FILE: trusted for the receiver on top of the system roots, as deliveries trust it. */
  readonly caFile: string | undefined
  readonly timeoutMillis: number
}

/** A webhook test target: passes the policy, at the check and at the connection, and answers a POST without a secret below 500. */
export const webhookTargetCheck = (url: string, options: WebhookTargetOptions) =>
  Effect.gen(function*() {
    const parsed = parseAllowlist(options.allowPrivate ?? "")
    const egress = { allowlist: parsed.ok ? parsed.allowlist : EMPTY_ALLOWLIST, resolve: yield* WebhookResolver }
    const verdict = yield* Effect.promise(() => checkWebhookUrl(url, "live", egress))
    if (!verdict.ok) return fatal(NAME, `the policy refuses it: ${verdict.reason}`, POLICY)
    const extraCa = options.caFile === undefined ? undefined : loadExtraCa(options.caFile)
    if (typeof extraCa === "object") return fatal(NAME, extraCa.error, "fix WEBHOOK_CA_FILE (docs/webhooks.md)")
    const outcome = yield* Effect.acquireUseRelease(
      Effect.sync(() => makeAgents(extraCa)),
      (agents) =>
        Effect.promise((signal) =>
          attempt({
            url,
            environment: "live",
            body: JSON.stringify({ type: "doctor.test" }),
            headers: { "Content-Type": "application/json", "User-Agent": "anchord-doctor" },
            timeoutMillis: options.timeoutMillis
          }, agents, egress, signal)
        ),
      (agents) => Effect.sync(() => destroyAgents(agents))
    )
    return describe(outcome, options.timeoutMillis)
  })

const describe = (outcome: { readonly statusCode: number | null; readonly error: string | null }, timeoutMillis: number): CheckResult => {
  if (outcome.statusCode !== null) {
    const message = `answered ${outcome.statusCode} to an unsigned test POST`
    return outcome.statusCode < 500 ? ok(NAME, message) : warn(NAME, message, "check the receiver's logs")
  }
  const error = outcome.error ?? "no answer"
  // The name resolved to a refused address when connecting, after passing the check: DNS changed under it.
  if (error.startsWith("refused: ")) return fatal(NAME, `the policy refuses the address it connects to: ${error.slice("refused: ".length)}`, POLICY)
  if (error.startsWith("timeout after ")) return warn(NAME, `no answer within ${timeoutMillis} ms`, UNREACHABLE)
  return warn(NAME, `no answer: ${error.replace(/^connection error: /, "")}`, UNREACHABLE)
}
