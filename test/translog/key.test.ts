/**
 * The transparency log's checkpoint key (src/translog/key.ts): doctor's check of LOG_KEY_FILE, the dev key made once
 * and kept, and each log's origin from PUBLIC_URL's host or the port.
 *   npx vitest run test/translog/key.test.ts
 */
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { logKeyCheck } from "../../src/doctor/doctor.ts"
import { devLogKeyFile, logKeyFromPem, logOrigin } from "../../src/translog/key.ts"

const dir = mkdtempSync(join(tmpdir(), "anchord-log-key-"))
const write = (name: string, text: string) => {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}
const pem = (key: ReturnType<typeof generateKeyPairSync>["privateKey"]) => key.export({ type: "pkcs8", format: "pem" }).toString()

describe("the log key", () => {
  it("doctor: unset is ok (unsigned), an Ed25519 key ok, P-256 / garbage / a missing file fatal", () => {
    expect(logKeyCheck(undefined)).toMatchObject({ check: "log-key", status: "ok", message: expect.stringContaining("LOG_KEY_FILE unset") })
    expect(logKeyCheck(write("ed.pem", pem(generateKeyPairSync("ed25519").privateKey)))).toMatchObject({ status: "ok" })
    expect(logKeyCheck(write("p256.pem", pem(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey))))
      .toMatchObject({ status: "fatal", message: "LOG_KEY_FILE: the log key must be Ed25519" })
    expect(logKeyCheck(write("junk.pem", "not a key"))).toMatchObject({ status: "fatal", message: "LOG_KEY_FILE: not a PEM private key" })
    expect(logKeyCheck(join(dir, "missing.pem"))).toMatchObject({ status: "fatal", message: expect.stringContaining("cannot read") })
  })

  it("the dev key: made once under <dataDir>/translog (mode 0600), then kept", () => {
    const file = devLogKeyFile(join(dir, "data"))
    expect(file).toBe(join(dir, "data", "translog", "log.key"))
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const first = readFileSync(file, "utf8")
    expect(typeof logKeyFromPem(first, "dev")).not.toBe("string")
    expect(readFileSync(devLogKeyFile(join(dir, "data")), "utf8")).toBe(first)
  })

  it("the origin: PUBLIC_URL's host and port, no scheme nor path; else localhost:<port>", () => {
    expect(logOrigin({ baseUrl: Option.some("https://anchord.example/base"), port: 8080 }, "base-sepolia")).toBe("anchord.example/log/base-sepolia")
    expect(logOrigin({ baseUrl: Option.some("http://10.0.0.5:9000"), port: 8080 }, "net")).toBe("10.0.0.5:9000/log/net")
    expect(logOrigin({ baseUrl: Option.none(), port: 8080 }, "net")).toBe("localhost:8080/log/net")
  })
})
