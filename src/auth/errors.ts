import { Schema } from "effect"

export class AccountNotFound extends Schema.TaggedError<AccountNotFound>()("AccountNotFound", {
  accountId: Schema.String
}) {
  override get message() {
    return `no account ${this.accountId}`
  }
}

export class AccountNotActive extends Schema.TaggedError<AccountNotActive>()("AccountNotActive", {
  accountId: Schema.String
}) {
  override get message() {
    return `account ${this.accountId} is not active: activate it before creating keys`
  }
}

export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", {
  keyId: Schema.String
}) {
  override get message() {
    return `no API key ${this.keyId}`
  }
}

/** Why a bearer token was not accepted (SPEC 7: MISSING_API_KEY, INVALID_API_KEY, EXPIRED_API_KEY). */
export type AuthFailureReason = "missing" | "malformed" | "unknown" | "revoked" | "expired" | "account_inactive"
