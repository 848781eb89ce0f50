/**
 * TSA test support: a dev TSA (root CA + ECDSA TSA certificate, src/tsa/devCa.ts) the next started node
 * signs with (TSA_CERT_FILE / TSA_KEY_FILE, read when a node starts), and a second CA that did not
 * issue it (the "wrong CA" of verification tests).
 */
import * as Path from "node:path"
import { createTsaCertificates, type DevTsaFiles } from "../../src/tsa/devCa.ts"

export interface DevTsa {
  readonly files: DevTsaFiles
  readonly otherCa: DevTsaFiles
  /** Unsets the TSA variables (afterAll). */
  readonly restore: () => void
}

export const useDevTsa = async (dir: string): Promise<DevTsa> => {
  const files = await createTsaCertificates(Path.join(dir, "ecdsa"), "ecdsa")
  const otherCa = await createTsaCertificates(Path.join(dir, "other"), "ecdsa")
  process.env.TSA_CERT_FILE = files.certFile
  process.env.TSA_KEY_FILE = files.keyFile
  return {
    files,
    otherCa,
    restore: () => {
      delete process.env.TSA_CERT_FILE
      delete process.env.TSA_KEY_FILE
    }
  }
}
