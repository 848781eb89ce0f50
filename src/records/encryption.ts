/**
 * Encrypted records (SPEC 3.1): AES-256-GCM whose key is the UTF-8 bytes of the client's
 * 32-character printable-ASCII key. Only ciphertext, nonce and tag are stored; the key never is.
 */
import * as Crypto from "node:crypto"

export const ENCRYPTION_KEY_PATTERN = /^[\x20-\x7e]{32}$/

export const isValidEncryptionKey = (key: string): boolean => ENCRYPTION_KEY_PATTERN.test(key)

export interface Sealed {
  readonly ciphertext: Buffer
  readonly nonce: Buffer
  readonly tag: Buffer
}

export const seal = (key: string, plaintext: string): Sealed => {
  const nonce = Crypto.randomBytes(12)
  const cipher = Crypto.createCipheriv("aes-256-gcm", Buffer.from(key, "utf8"), nonce)
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return { ciphertext, nonce, tag: cipher.getAuthTag() }
}

/** undefined when the key is wrong (the tag does not authenticate). */
export const open = (key: string, sealed: Sealed): string | undefined => {
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", Buffer.from(key, "utf8"), sealed.nonce)
    decipher.setAuthTag(sealed.tag)
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

/**
 * The salted commitment of an encrypted record (docs/verifying.md, "Salted commitments"): the JCS text of
 * `{"data": <data>, "salt": "<salt>"}`, whose SHA-256 is the record's hash and which is what gets sealed, so
 * the salt lives inside the ciphertext. Built from the data's canonical text: members in JCS order
 * ("data" < "salt"), and a base64url salt needs no escaping, so this is JCS of the object itself.
 * 32 random bytes: proofs and certificates no longer let anyone test guesses of a low-entropy plaintext.
 */
export const commitSalted = (dataJcs: string): { readonly salt: string; readonly committed: string } => {
  const salt = Crypto.randomBytes(32).toString("base64url")
  return { salt, committed: `{"data":${dataJcs},"salt":"${salt}"}` }
}
