/**
 * What can go wrong in the console, as the console says it. Each names its SPEC 7 code (the console's
 * are in ERROR_CODES too: src/api/errors.ts); `toWire` maps them at the edge. Messages are for the
 * person at the screen: they never name a secret, and a failed sign-in never says whether the email
 * exists.
 */
import { Schema } from "effect"
import { DomainErrorClass } from "../api/domainError.ts"

export class InvalidCredentials extends DomainErrorClass<InvalidCredentials>()("InvalidCredentials", {
  /** Failed attempts left for this email from this address before that pair pauses (said when it is few). */
  attemptsLeft: Schema.Number
}, "INVALID_CREDENTIALS", (error) => {
  return "Wrong email or password." +
    (error.attemptsLeft <= 2
      ? ` ${error.attemptsLeft} more failed attempt${error.attemptsLeft === 1 ? "" : "s"} and sign-in for this email pauses from your network address.`
      : "")
}) {}

export class SignInThrottled extends DomainErrorClass<SignInThrottled>()("SignInThrottled", {
  /** pair: this email from this address; address: this address, any email; email: the email's slow-down. */
  scope: Schema.Literals(["pair", "address", "email"]),
  retryAfterSeconds: Schema.Number
}, "SIGN_IN_THROTTLED", (error) => {
  const s = error.retryAfterSeconds
  const minutes = Math.max(1, Math.ceil(s / 60))
  const wait = s < 120 ? `${s} second${s === 1 ? "" : "s"}` : `${minutes} minute${minutes === 1 ? "" : "s"}`
  switch (error.scope) {
    case "pair":
      return `Too many failed sign-in attempts for this email from your network address. Try again in ${wait}.`
    case "address":
      return `Too many failed sign-in attempts from your network address. Try again in ${wait}.`
    case "email":
      return `Too many failed sign-in attempts for this email: sign-in slows down. Try again in ${wait}.`
  }
}) {}

/** Password hashing waited past its own bound (too many sign-ins at once): not the database. */
export class SignInBusy
  extends DomainErrorClass<SignInBusy>()("SignInBusy", { retryAfterSeconds: Schema.Number }, "SERVICE_UNAVAILABLE",
    () => "Too many sign-ins at once: try again in a few seconds.")
{}

/** The account is suspended: its console is read-only for its members. */
export class AccountSuspended
  extends DomainErrorClass<AccountSuspended>()("AccountSuspended", { accountId: Schema.String }, "ACCOUNT_SUSPENDED",
    (error) => `Account ${error.accountId} is suspended: its console is read-only until an operator activates it again.`)
{}

export class NotSignedIn extends DomainErrorClass<NotSignedIn>()("NotSignedIn", {}, "NOT_SIGNED_IN", () => "Not signed in: sign in to the console.") {}

export class SessionExpired extends DomainErrorClass<SessionExpired>()("SessionExpired", {
  reason: Schema.Literals(["idle", "absolute"])
}, "SESSION_EXPIRED", (error) => {
  return error.reason === "idle"
    ? "Your session ended after a period of inactivity: sign in again."
    : "Your session reached its maximum length: sign in again."
}) {}

export class CsrfRejected extends DomainErrorClass<CsrfRejected>()("CsrfRejected", {
  reason: Schema.Literals(["missing", "mismatch", "cross-site"])
}, "CSRF_TOKEN_INVALID", (error) => {
  return error.reason === "cross-site"
    ? "Refused: this request came from another site."
    : `Refused: this change needs the session's CSRF token in X-CSRF-Token (${
      error.reason === "missing" ? "none was sent" : "the one sent is not this session's"
    }). Reload the console.`
}) {}

/** The signed-in user's role does not allow it (a viewer changing something, a member outside their account). */
export class NotAllowed extends DomainErrorClass<NotAllowed>()("NotAllowed", { reason: Schema.String }, "FORBIDDEN", (error) => error.reason) {}

export class InvalidLink
  extends DomainErrorClass<InvalidLink>()("InvalidLink", {}, "INVALID_LINK",
    () => "This link is not valid: it was already used, it expired, or it was mistyped. Ask for a new one.")
{}

export class EmailTaken
  extends DomainErrorClass<EmailTaken>()("EmailTaken", { email: Schema.String }, "EMAIL_TAKEN", (error) => `${error.email} already has a console user`)
{}

export class InvalidConsoleInput
  extends DomainErrorClass<InvalidConsoleInput>()("InvalidConsoleInput", { reason: Schema.String }, "VALIDATION_ERROR", (error) => error.reason)
{}

export class ConsoleNotFound
  extends DomainErrorClass<ConsoleNotFound>()("ConsoleNotFound", { what: Schema.String }, "NOT_FOUND", (error) => `No ${error.what}`)
{}

export class AccountInactive
  extends DomainErrorClass<AccountInactive>()("AccountInactive", { accountId: Schema.String }, "ACCOUNT_NOT_ACTIVE",
    (error) => `Account ${error.accountId} is not active: an operator must activate it before keys can be created`)
{}
