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

/** No bearer token (or an empty one). */
export class MissingKey extends Schema.TaggedError<MissingKey>()("MissingKey", {}) {}
/** Not shaped like an API key. */
export class MalformedKey extends Schema.TaggedError<MalformedKey>()("MalformedKey", {}) {}
/** Shaped like a key, but no key has its digest. */
export class UnknownKey extends Schema.TaggedError<UnknownKey>()("UnknownKey", {}) {}
export class RevokedKey extends Schema.TaggedError<RevokedKey>()("RevokedKey", {}) {}
export class ExpiredKey extends Schema.TaggedError<ExpiredKey>()("ExpiredKey", {}) {}
/** The key's account is not ACTIVE (pending or suspended). */
export class AccountInactive extends Schema.TaggedError<AccountInactive>()("AccountInactive", {}) {}

/**
 * Why a bearer token was not accepted. Mapped to the wire once, by Admission (SPEC 7: MISSING_API_KEY,
 * INVALID_API_KEY, EXPIRED_API_KEY, all 401). Never carries the token.
 */
export class AuthRefused extends Schema.TaggedError<AuthRefused>()("AuthRefused", {
  reason: Schema.Union([MissingKey, MalformedKey, UnknownKey, RevokedKey, ExpiredKey, AccountInactive])
}) {
  override get message() {
    return `API key refused: ${this.reason._tag}`
  }
}
export type AuthRefusal = AuthRefused["reason"]
