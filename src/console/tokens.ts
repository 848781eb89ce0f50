/**
 * Console secrets: session tokens and one-time link tokens are 32 random bytes (base64url), stored only
 * as SHA-256 digests; a session's CSRF token is derived from its session token (HMAC), so it needs no
 * storage and is worthless without the cookie it belongs to. Secrets are compared in constant time.
 */
import * as Crypto from "node:crypto"

export const newToken = (): string => Crypto.randomBytes(32).toString("base64url")

/** What is stored for a token. */
export const tokenDigest = (token: string): Buffer => Crypto.hash("sha256", token, "buffer")

/** Tokens are 43 base64url characters: anything else is refused before any lookup. */
export const isToken = (value: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(value)

/** The CSRF token of a session (synchronizer token, derived): HMAC-SHA256 keyed by the session token. */
export const csrfTokenOf = (sessionToken: string): string => Crypto.createHmac("sha256", sessionToken).update("anchord console csrf v1").digest("base64url")

/** Constant-time equality of two secrets (of any lengths: their digests are compared). */
export const sameSecret = (a: string, b: string): boolean => Crypto.timingSafeEqual(Crypto.hash("sha256", a, "buffer"), Crypto.hash("sha256", b, "buffer"))
