/**
 * Console passwords: scrypt (node:crypto; memory-hard) with a random 16-byte salt per password, stored
 * as `scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>` so the cost can be raised later without
 * invalidating stored hashes. Verification compares in constant time, and takes the same time for an
 * unknown email (a stand-in hash is checked), so a timing difference tells no one which emails exist.
 */
import * as Crypto from "node:crypto"

/** 2^15 × 8 × 128 bytes = 32 MiB per hash, ~0.1 s of one core: OWASP's scrypt minimum is N=2^17 with r=8 at p=1 *or* an equivalent; raise N here when the hardware allows. */
const N = 2 ** 15
const R = 8
const P = 1
const KEY_LENGTH = 32
const SALT_LENGTH = 16

export const MIN_PASSWORD_LENGTH = 10
export const MAX_PASSWORD_LENGTH = 256

/** Why a new password is refused, or undefined when it is acceptable. */
export const passwordProblem = (password: string): string | undefined => {
  const length = [...password].length
  if (length < MIN_PASSWORD_LENGTH) return `password: at least ${MIN_PASSWORD_LENGTH} characters`
  if (length > MAX_PASSWORD_LENGTH) return `password: at most ${MAX_PASSWORD_LENGTH} characters`
  return undefined
}

const derive = (password: string, salt: Buffer, n: number, r: number, p: number, length: number) =>
  new Promise<Buffer>((resolve, reject) =>
    // Asynchronous: the work runs on libuv's thread pool, not the event loop.
    Crypto.scrypt(password.normalize("NFC"), salt, length, { N: n, r, p, maxmem: 256 * n * r }, (error, key) => error ? reject(error) : resolve(key))
  )

export const hashPassword = async (password: string): Promise<string> => {
  const salt = Crypto.randomBytes(SALT_LENGTH)
  const key = await derive(password, salt, N, R, P, KEY_LENGTH)
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${key.toString("base64")}`
}

const parse = (stored: string) => {
  const parts = stored.split("$")
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined
  const [n, r, p] = parts.slice(1, 4).map(Number)
  const salt = Buffer.from(parts[4]!, "base64")
  const key = Buffer.from(parts[5]!, "base64")
  if (![n, r, p].every((x) => Number.isSafeInteger(x) && x! > 0) || salt.length === 0 || key.length === 0) return undefined
  return { n: n!, r: r!, p: p!, salt, key }
}

/** Checked when the email has no user (or no password): the same work as a real check. */
let standIn: Promise<string> | undefined

/** Whether `password` matches `stored` (undefined: no such user; the answer is false after the same work). */
export const verifyPassword = async (password: string, stored: string | null | undefined): Promise<boolean> => {
  const known = stored === null || stored === undefined ? undefined : parse(stored)
  const target = known ?? parse(await (standIn ??= hashPassword(Crypto.randomBytes(16).toString("hex"))))!
  const key = await derive(password, target.salt, target.n, target.r, target.p, target.key.length)
  return Crypto.timingSafeEqual(key, target.key) && known !== undefined
}
