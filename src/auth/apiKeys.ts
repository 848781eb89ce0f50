/**
 * API key format (SPEC 2): `dcp_live_` / `dcp_test_` + 32 characters of [A-Za-z0-9].
 * Keys are stored only as SHA-256 digests plus a short display form; the full key is shown once.
 */
import * as Crypto from "node:crypto"

import type { Environment } from "../api/recordSchemas.ts"

export type { Environment }
export const API_KEY_PATTERN = /^dcp_(live|test)_[A-Za-z0-9]{32}$/

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** 32 alphanumerics from the CSPRNG, by rejection sampling (no modulo bias). */
export const randomAlphanumeric = (length: number): string => {
  let out = ""
  while (out.length < length) {
    for (const byte of Crypto.randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62]
    }
  }
  return out
}

export const generateApiKey = (environment: Environment): string => `dcp_${environment}_${randomAlphanumeric(32)}`

export const parseApiKey = (token: string): { readonly environment: Environment } | undefined => {
  const match = API_KEY_PATTERN.exec(token)
  return match ? { environment: match[1] as Environment } : undefined
}

export const apiKeyDigest = (token: string): Buffer => Crypto.hash("sha256", token, "buffer")

/** What lists show: the prefix and the last four characters. */
export const displayKey = (token: string): string => `${token.slice(0, 13)}…${token.slice(-4)}`

/** Constant-time comparison of two secrets' digests. */
export const digestsEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Crypto.timingSafeEqual(a, b)
