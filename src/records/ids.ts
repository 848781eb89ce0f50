/** ObjectId-shaped record ids: 4-byte seconds, 5 random bytes per process, 3-byte counter (24 hex). */
import * as Crypto from "node:crypto"

const processRandom = Crypto.randomBytes(5).toString("hex")
let counter = Crypto.randomBytes(3).readUIntBE(0, 3)

export const newRecordId = (now: number): string => {
  counter = (counter + 1) & 0xffffff
  const seconds = Math.floor(now / 1000).toString(16).padStart(8, "0")
  return seconds + processRandom + counter.toString(16).padStart(6, "0")
}
