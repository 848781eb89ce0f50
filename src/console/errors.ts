/**
 * What can go wrong in the console, as the console says it. Each names its SPEC 7 code (the console's
 * are in ERROR_CODES too: src/api/errors.ts); `toWire` maps them at the edge. Messages are for the
 * person at the screen: they never name a secret, and a failed sign-in never says whether the email
 * exists.
 */
import { Schema } from "effect"

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {
  /** Failed attempts left for this email from this address before that pair pauses (said when it is few). */
  attemptsLeft: Schema.Number
}) {
  get errorCode() {
    return "INVALID_CREDENTIALS" as const
  }
  override get message() {
    return "Wrong email or password." +
      (this.attemptsLeft <= 2
        ? ` ${this.attemptsLeft} more failed attempt${this.attemptsLeft === 1 ? "" : "s"} and sign-in for this email pauses from your network address.`
        : "")
  }
}

export class SignInThrottled extends Schema.TaggedError<SignInThrottled>()("SignInThrottled", {
  /** pair: this email from this address; address: this address, any email; email: the email's slow-down. */
  scope: Schema.Literals(["pair", "address", "email"]),
  retryAfterSeconds: Schema.Number
}) {
  get errorCode() {
    return "SIGN_IN_THROTTLED" as const
  }
  override get message() {
    const s = this.retryAfterSeconds
    const minutes = Math.max(1, Math.ceil(s / 60))
    const wait = s < 120 ? `${s} second${s === 1 ? "" : "s"}` : `${minutes} minute${minutes === 1 ? "" : "s"}`
    switch (this.scope) {
      case "pair":
        return `Too many failed sign-in attempts for this email from your network address. Try again in ${wait}.`
      case "address":
        return `Too many failed sign-in attempts from your network address. Try again in ${wait}.`
      case "email":
        return `Too many failed sign-in attempts for this email: sign-in slows down. Try again in ${wait}.`
    }
  }
}

/** Password hashing waited past its own bound (too many sign-ins at once): not the database. */
export class SignInBusy extends Schema.TaggedError<SignInBusy>()("SignInBusy", { retryAfterSeconds: Schema.Number }) {
  get errorCode() {
    return "SERVICE_UNAVAILABLE" as const
  }
  override get message() {
    return "Too many sign-ins at once: try again in a few seconds."
  }
}

/** The account is suspended: its console is read-only for its members. */
export class AccountSuspended extends Schema.TaggedError<AccountSuspended>()("AccountSuspended", { accountId: Schema.String }) {
  get errorCode() {
    return "ACCOUNT_SUSPENDED" as const
  }
  override get message() {
    return `Account ${this.accountId} is suspended: its console is read-only until an operator activates it again.`
  }
}

export class NotSignedIn extends Schema.TaggedError<NotSignedIn>()("NotSignedIn", {}) {
  get errorCode() {
    return "NOT_SIGNED_IN" as const
  }
  override get message() {
    return "Not signed in: sign in to the console."
  }
}

export class SessionExpired extends Schema.TaggedError<SessionExpired>()("SessionExpired", {
  reason: Schema.Literals(["idle", "absolute"])
}) {
  get errorCode() {
    return "SESSION_EXPIRED" as const
  }
  override get message() {
    return this.reason === "idle"
      ? "Your session ended after a period of inactivity: sign in again."
      : "Your session reached its maximum length: sign in again."
  }
}

export class CsrfRejected extends Schema.TaggedError<CsrfRejected>()("CsrfRejected", {
  reason: Schema.Literals(["missing", "mismatch", "cross-site"])
}) {
  get errorCode() {
    return "CSRF_TOKEN_INVALID" as const
  }
  override get message() {
    return this.reason === "cross-site"
      ? "Refused: this request came from another site."
      : `Refused: this change needs the session's CSRF token in X-CSRF-Token (${
        this.reason === "missing" ? "none was sent" : "the one sent is not this session's"
      }). Reload the console.`
  }
}

/** The signed-in user's role does not allow it (a viewer changing something, a member outside their account). */
export class NotAllowed extends Schema.TaggedError<NotAllowed>()("NotAllowed", { reason: Schema.String }) {
  get errorCode() {
    return "FORBIDDEN" as const
  }
  override get message() {
    return this.reason
  }
}

export class InvalidLink extends Schema.TaggedError<InvalidLink>()("InvalidLink", {}) {
  get errorCode() {
    return "INVALID_LINK" as const
  }
  override get message() {
    return "This link is not valid: it was already used, it expired, or it was mistyped. Ask for a new one."
  }
}

export class EmailTaken extends Schema.TaggedError<EmailTaken>()("EmailTaken", { email: Schema.String }) {
  get errorCode() {
    return "EMAIL_TAKEN" as const
  }
  override get message() {
    return `${this.email} already has a console user`
  }
}

export class InvalidConsoleInput extends Schema.TaggedError<InvalidConsoleInput>()("InvalidConsoleInput", { reason: Schema.String }) {
  get errorCode() {
    return "VALIDATION_ERROR" as const
  }
  override get message() {
    return this.reason
  }
}

export class ConsoleNotFound extends Schema.TaggedError<ConsoleNotFound>()("ConsoleNotFound", { what: Schema.String }) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return `No ${this.what}`
  }
}

export class AccountInactive extends Schema.TaggedError<AccountInactive>()("AccountInactive", { accountId: Schema.String }) {
  get errorCode() {
    return "ACCOUNT_NOT_ACTIVE" as const
  }
  override get message() {
    return `Account ${this.accountId} is not active: an operator must activate it before keys can be created`
  }
}
