/**
 * Who may do what in the console, for every area's handlers:
 *
 * - operators: every account, the accounts list, creating accounts, plans, suspension, networks;
 * - an account's `admin`: everything of their account, secrets included, and inviting members;
 * - an account's `viewer`: reads their account, and sees no secret (webhook secret, member links);
 *   a viewer asking to change something gets 403 FORBIDDEN saying so.
 *
 * Another account is "not found" to a member (its existence is not confirmed).
 */
import { Effect } from "effect"
import { CurrentSession } from "../../api/console.ts"
import type { Environment } from "../../api/recordSchemas.ts"
import { Accounts } from "../../auth/Accounts.ts"
import { ConsoleNotFound, NotAllowed } from "../errors.ts"

/** The checks, over the node's accounts (built once by each area's handlers layer). */
export const consoleAccess = Effect.gen(function*() {
  const accounts = yield* Accounts

  const getAccount = (accountId: string) =>
    accounts.get(accountId).pipe(Effect.catchTag("AccountNotFound", () => Effect.fail(new ConsoleNotFound({ what: `account ${accountId}` }))))

  /**
   * The account, if the signed-in user may do `need` on it: read (members of it, operators), change
   * (its admins, operators), secret (its admins, operators: webhook secrets, invitation links),
   * invitations (its admins, operators: the pending invitations). A suspended account's members
   * change nothing: the session middleware refuses their state changes (src/console/middleware.ts).
   */
  const access = (accountId: string, need: "read" | "change" | "secret" | "invitations") =>
    Effect.gen(function*() {
      const { user } = yield* CurrentSession
      if (!user.operator) {
        if (user.accountId !== accountId) return yield* new ConsoleNotFound({ what: `account ${accountId}` })
        if (need !== "read" && user.role !== "admin") {
          return yield* new NotAllowed({
            reason: need === "secret"
              ? "Viewers cannot see secrets: ask an admin of this account."
              : need === "invitations"
              ? "Only admins of this account see and revoke its invitations."
              : "Viewers can look but not change anything: ask an admin of this account."
          })
        }
      }
      return yield* getAccount(accountId)
    })

  const operatorOnly = Effect.gen(function*() {
    const { user } = yield* CurrentSession
    if (!user.operator) return yield* new NotAllowed({ reason: "Only operators can do this." })
  })

  return { accounts, getAccount, access, operatorOnly }
})

/** Viewers see no secret: webhook URLs (which may carry one) are shown by their origin. */
export const hidesSecrets = Effect.map(CurrentSession, ({ user }) => !user.operator && user.role !== "admin")

export const owner = (accountId: string, environment: Environment) => ({ accountId, environment })
