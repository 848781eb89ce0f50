/**
 * The RFC 3161 TSA (docs/timestamping.md) with real third-party clients: `openssl ts` makes the
 * queries and verifies the tokens, @peculiar/asn1-cms (a second ASN.1 library) parses them, over a real
 * socket against real PostgreSQL; two nodes on one database for serial uniqueness.
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { AsnConvert, OctetString } from "@peculiar/asn1-schema"
import { ContentInfo, SignedData } from "@peculiar/asn1-cms"
import { ConfigProvider, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NodeLayer } from "../../src/app/layers.ts"
import { createTsaCertificates, type DevTsaFiles } from "../../src/tsa/devCa.ts"
import { tsaFilesReport } from "../../src/tsa/keys.ts"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { evmUnservedEnv } from "../support/process.ts"
import { type DevTsa, useDevTsa } from "./support.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-tsa-"))
const file = (name: string) => Path.join(dir, name)
const openssl = (args: ReadonlyArray<string>) => ChildProcess.spawnSync("openssl", args, { encoding: "utf8" })
const ok = (args: ReadonlyArray<string>) => {
  const r = openssl(args)
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`)
  return r.stdout
}

describe("RFC 3161 TSA", () => {
  let node: TestNode
  let other: TestNode
  let key: string
  let files: DevTsaFiles
  let otherCa: DevTsaFiles
  let tsa: DevTsa | undefined

  beforeAll(async () => {
    tsa = await useDevTsa(dir)
    files = tsa.files
    otherCa = tsa.otherCa
    node = await startNode()
    // The second node serves the POSTs through their HttpApi endpoints, the first on the gateway's fast path.
    other = await startNode({ databaseUrl: node.databaseUrl, config: { ingestFastPath: false } })
    key = (await node.createKey(await node.createAccount())).key
    Fs.writeFileSync(file("data.txt"), "the document\n")
  })
  afterAll(async () => {
    await other?.stop()
    await node?.stop()
    tsa?.restore()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  const post = (body: Uint8Array, headers: Record<string, string> = {}, base = node.baseUrl, path = "/v1/timestamp") =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/timestamp-query", ...headers },
      body
    })

  /** `openssl ts -query` for the data file, POSTed; the reply written to `name`.tsr. */
  const stamp = async (name: string, options: { hash?: string; cert?: boolean; headers?: Record<string, string>; path?: string } = {}) => {
    ok(["ts", "-query", "-data", file("data.txt"), `-${options.hash ?? "sha256"}`, ...(options.cert === false ? [] : ["-cert"]), "-out", file(`${name}.tsq`)])
    const r = await post(Fs.readFileSync(file(`${name}.tsq`)), options.headers, node.baseUrl, options.path)
    const bytes = new Uint8Array(await r.arrayBuffer())
    Fs.writeFileSync(file(`${name}.tsr`), bytes)
    return { r, bytes }
  }

  const replyText = (name: string) => ok(["ts", "-reply", "-in", file(`${name}.tsr`), "-text"])
  const verify = (name: string, data = file("data.txt"), ca = files.caFile) =>
    openssl(["ts", "-verify", "-data", data, "-in", file(`${name}.tsr`), "-CAfile", ca])

  it("openssl's query gets a token openssl verifies against the CA; a wrong CA and tampered data fail", async () => {
    const { r } = await stamp("a")
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toBe("application/timestamp-reply")
    expect(r.headers.get("x-ratelimit-limit")).not.toBeNull()
    const good = verify("a")
    expect(good.stdout + good.stderr).toContain("Verification: OK")
    expect(good.status).toBe(0)
    const wrongCa = verify("a", file("data.txt"), otherCa.caFile)
    expect(wrongCa.status).not.toBe(0)
    expect(wrongCa.stdout).toContain("Verification: FAILED")
    Fs.writeFileSync(file("tampered.txt"), "the document!\n")
    const tampered = verify("a", file("tampered.txt"))
    expect(tampered.status).not.toBe(0)
    expect(tampered.stderr).toContain("message imprint mismatch")
  })

  it("the nonce is echoed, the policy, accuracy and millisecond genTime stated; a second library parses the token", async () => {
    const { bytes } = await stamp("b")
    const queryNonce = /Nonce: (\S+)/.exec(ok(["ts", "-query", "-in", file("b.tsq"), "-text"]))![1]
    const text = replyText("b")
    expect(text).toContain("Status: Granted.")
    expect(/Nonce: (\S+)/.exec(text)![1]).toBe(queryNonce)
    expect(text).toContain("Policy OID: 2.25.254261995566862221233085334779423650513")
    expect(text).toMatch(/Accuracy: 0x01 seconds/)
    expect(text).toMatch(/Time stamp: \w+ +\d+ \d\d:\d\d:\d\d(\.\d{1,3})? \d{4} GMT/)
    // @peculiar/asn1-cms: TimeStampResp ::= SEQUENCE { status, token }: the token is its second element.
    const tokenDer = tokenOf(bytes)
    const info = AsnConvert.parse(tokenDer, ContentInfo)
    expect(info.contentType).toBe("1.2.840.113549.1.7.2")
    const signed = AsnConvert.parse(info.content, SignedData)
    expect(signed.encapContentInfo.eContentType).toBe("1.2.840.113549.1.9.16.1.4")
    expect(signed.certificates?.length).toBe(1)
    const attrs = signed.signerInfos[0]!.signedAttrs!.map((a) => a.attrType)
    expect(attrs).toEqual(expect.arrayContaining(["1.2.840.113549.1.9.3", "1.2.840.113549.1.9.4", "1.2.840.113549.1.9.16.2.47"]))
    const tstInfo = signed.encapContentInfo.eContent!.single as OctetString
    const digest = signed.signerInfos[0]!.signedAttrs!.find((a) => a.attrType === "1.2.840.113549.1.9.4")!.attrValues[0]!
    expect(Buffer.from(AsnConvert.parse(digest, OctetString).buffer)).toEqual(Crypto.hash("sha256", new Uint8Array(tstInfo.buffer), "buffer"))
  })

  it("every token is a hash-only record committed with its token row; GET /v1/timestamp/{serial} returns both", async () => {
    const { r, bytes } = await stamp("c", { cert: false })
    const serial = r.headers.get("x-timestamp-serial")!
    expect(serial).toMatch(/^\d+$/)
    expect(replyText("c")).toContain(`Serial number: 0x${BigInt(serial).toString(16).toUpperCase().padStart(2, "0")}`)
    const imprint = Crypto.hash("sha256", Fs.readFileSync(file("data.txt")), "hex")
    const rows = await query<{ hash: string; source: string; metadata: unknown; token: Buffer }>(node.databaseUrl, `
      SELECT r.hash, r.source, r.metadata, t.token FROM timestamp_tokens t JOIN records r ON r.id = t.record_id WHERE t.serial = $1`, [serial])
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ hash: imprint, source: "hash", metadata: { timestampSerial: serial } })
    expect(Buffer.from(rows[0]!.token)).toEqual(Buffer.from(tokenOf(bytes)))
    const got = await call(node.baseUrl, "GET", `/v1/timestamp/${serial}`, { key })
    expect(got.status).toBe(200)
    expect(got.json.data).toMatchObject({ serial, hashAlgorithm: "sha256", messageImprint: imprint, recordHash: imprint, status: "QUEUED", proof: null })
    expect(Buffer.from(got.json.data.token, "base64")).toEqual(Buffer.from(tokenOf(bytes)))
    expect((await call(node.baseUrl, "GET", "/v1/timestamp/999999999", { key })).status).toBe(404)
    // Another account does not see it.
    const stranger = (await node.createKey(await node.createAccount())).key
    expect((await call(node.baseUrl, "GET", `/v1/timestamp/${serial}`, { key: stranger })).status).toBe(404)
  })

  it("SHA-384 and SHA-512 imprints: the record's hash is SHA-256 of the token's TSTInfo", async () => {
    for (const hash of ["sha384", "sha512"]) {
      const { r, bytes } = await stamp(hash, { hash })
      expect(verify(hash).status).toBe(0)
      const signed = AsnConvert.parse(AsnConvert.parse(tokenOf(bytes), ContentInfo).content, SignedData)
      const tstInfo = new Uint8Array((signed.encapContentInfo.eContent!.single as OctetString).buffer)
      const rows = await query<{ hash: string }>(node.databaseUrl,
        `SELECT r.hash FROM timestamp_tokens t JOIN records r ON r.id = t.record_id WHERE t.serial = $1`, [r.headers.get("x-timestamp-serial")])
      expect(rows[0]!.hash).toBe(Crypto.hash("sha256", tstInfo, "hex"))
    }
  })

  it("refusals are TimeStampResp rejections (HTTP 200): SHA-1 badAlg, malformed badDataFormat, another policy unacceptedPolicy; nothing stored", async () => {
    const before = Number((await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM timestamp_tokens"))[0]!.n)
    const sha1 = await stamp("sha1", { hash: "sha1" })
    expect(sha1.r.status).toBe(200)
    expect(sha1.r.headers.get("x-timestamp-serial")).toBeNull()
    const text = replyText("sha1")
    expect(text).toContain("Status: Rejected.")
    expect(text).toContain("Failure info: unrecognized or unsupported algorithm identifier")
    for (const body of [new Uint8Array([0x30, 0x03, 0x02, 0x01]), new TextEncoder().encode("hello"), new Uint8Array(0)]) {
      const r = await post(body)
      expect(r.status).toBe(200)
      Fs.writeFileSync(file("bad.tsr"), new Uint8Array(await r.arrayBuffer()))
      expect(replyText("bad")).toContain("the data submitted has the wrong format")
    }
    ok(["ts", "-query", "-data", file("data.txt"), "-sha256", "-tspolicy", "1.2.3.4", "-out", file("policy.tsq")])
    Fs.writeFileSync(file("policy.tsr"), new Uint8Array(await (await post(Fs.readFileSync(file("policy.tsq")))).arrayBuffer()))
    expect(replyText("policy")).toContain("the requested TSA policy is not supported by the TSA")
    expect(Number((await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM timestamp_tokens"))[0]!.n)).toBe(before)
  })

  it("another Content-Type is 415 in the error body; no key 401; the key as the HTTP Basic password works, at /tsa too", async () => {
    const wrongType = await call(node.baseUrl, "POST", "/v1/timestamp", { key, body: { hash: "x" } })
    expect(wrongType.status).toBe(415)
    expect(wrongType.json).toMatchObject({ success: false, errorCode: "UNSUPPORTED_MEDIA_TYPE" })
    expect(wrongType.json.error).toContain("application/timestamp-query")
    const query_ = Fs.readFileSync(file("a.tsq"))
    const anonymous = await fetch(`${node.baseUrl}/v1/timestamp`, { method: "POST", headers: { "content-type": "application/timestamp-query" }, body: query_ })
    expect(anonymous.status).toBe(401)
    const basic = `Basic ${Buffer.from(`signtool:${key}`).toString("base64")}`
    const viaBasic = await stamp("basic", { headers: { authorization: basic }, path: "/tsa" })
    expect(viaBasic.r.status).toBe(200)
    expect(viaBasic.r.headers.get("x-quota-limit")).not.toBeNull()
    expect(verify("basic").status).toBe(0)
    const wrongPassword = await post(query_, { authorization: `Basic ${Buffer.from("u:dcp_test_nope").toString("base64")}` })
    expect(wrongPassword.status).toBe(401)
  })

  it("TSA_PUBLIC: a request without credentials is served, counted per address, recorded under TSA_PUBLIC_API_KEY's account", async () => {
    const account = await node.createAccount()
    const publicKey = (await node.createKey(account)).key
    // The environment as read when the first node started, plus the two variables (Effect reads process.env once).
    // Its own ConfigProvider: the tokens' (EVM) records need the default network ids named (test/support/process.ts).
    const env = { ...process.env, ...evmUnservedEnv(process.env), TSA_PUBLIC: "true", TSA_PUBLIC_API_KEY: publicKey } as Record<string, string>
    const open = await startNode({
      databaseUrl: node.databaseUrl,
      layer: NodeLayer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
    })
    try {
      const r = await fetch(`${open.baseUrl}/tsa`, { method: "POST", headers: { "content-type": "application/timestamp-query" },
        body: Fs.readFileSync(file("a.tsq")) })
      expect(r.status).toBe(200)
      expect(r.headers.get("x-ratelimit-limit")).toBe("1000") // the per-address limit of the test nodes
      const rows = await query<{ account_id: string }>(node.databaseUrl, "SELECT account_id FROM timestamp_tokens WHERE serial = $1", [
        r.headers.get("x-timestamp-serial")
      ])
      expect(rows[0]?.account_id).toBe(account)
    } finally {
      await open.stop()
    }
  })

  it("the gateway's fast path and the HttpApi endpoints answer alike (status, headers, refusal bytes), at both paths", async () => {
    const q = Fs.readFileSync(file("a.tsq"))
    const basic = `Basic ${Buffer.from(`signtool:${key}`).toString("base64")}`
    const cases: Array<{ path: string; headers: Record<string, string>; body: Uint8Array }> = []
    for (const path of ["/v1/timestamp", "/tsa"]) {
      cases.push(
        { path, headers: {}, body: q },
        { path, headers: { authorization: basic }, body: q },
        { path, headers: {}, body: new Uint8Array([0x30, 0x03, 0x02, 0x01]) },
        { path, headers: { "content-type": "application/json" }, body: q },
        { path, headers: { authorization: "Bearer dcp_test_nope" }, body: q },
        { path, headers: {}, body: new Uint8Array(17 * 1024) }
      )
    }
    const shape = async (base: string, c: (typeof cases)[number]) => {
      const r = await post(c.body, c.headers, base, c.path)
      const body = new Uint8Array(await r.arrayBuffer())
      const headers = [...r.headers].filter(([k]) =>
        !["date", "x-timestamp-serial", "x-ratelimit-remaining", "x-ratelimit-reset", "x-quota-used", "x-quota-remaining", "content-length"].includes(k)
      )
      // A granted token's bytes differ (serial, time, signature); a refusal or an error body must not.
      return { status: r.status, headers, body: r.headers.get("x-timestamp-serial") === null ? Buffer.from(body).toString("hex") : "token" }
    }
    for (const c of cases) expect(await shape(node.baseUrl, c), `${c.path} ${JSON.stringify(c.headers)}`).toEqual(await shape(other.baseUrl, c))
  })

  it("a token row the database refuses fails only its own request, not the others committed with it (one statement per group)", async () => {
    Fs.writeFileSync(file("poison.txt"), "poisoned\n")
    ok(["ts", "-query", "-data", file("poison.txt"), "-sha256", "-cert", "-out", file("poison.tsq")])
    const imprint = Crypto.hash("sha256", Fs.readFileSync(file("poison.txt")), "hex")
    await query(node.databaseUrl, `
      CREATE FUNCTION test_poison_token() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.message_imprint = decode('${imprint}', 'hex') THEN RAISE EXCEPTION 'poisoned token'; END IF; RETURN NEW; END $$`)
    await query(node.databaseUrl, "CREATE TRIGGER test_poison_token BEFORE INSERT ON timestamp_tokens FOR EACH ROW EXECUTE FUNCTION test_poison_token()")
    try {
      const good = Fs.readFileSync(file("a.tsq"))
      const bad = Fs.readFileSync(file("poison.tsq"))
      // Sent together, so that they would share a group commit.
      const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => post(i === 7 ? bad : good)))
      expect(responses[7]!.status).toBe(500)
      const served = responses.filter((_, i) => i !== 7)
      expect(served.every((r) => r.status === 200 && r.headers.get("x-timestamp-serial") !== null)).toBe(true)
      const serials = served.map((r) => r.headers.get("x-timestamp-serial"))
      const stored = await query<{ n: string }>(node.databaseUrl,
        "SELECT count(*) AS n FROM timestamp_tokens t JOIN records r ON r.id = t.record_id WHERE t.serial = ANY($1::bigint[])", [serials])
      expect(Number(stored[0]!.n)).toBe(29)
      const poisoned = await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM records WHERE hash = $1", [imprint])
      expect(Number(poisoned[0]!.n)).toBe(0) // its record went with it
    } finally {
      await query(node.databaseUrl, "DROP TRIGGER test_poison_token ON timestamp_tokens")
      await query(node.databaseUrl, "DROP FUNCTION test_poison_token()")
    }
  })

  it("serials are unique across two nodes on one database under concurrent requests", async () => {
    const q = Fs.readFileSync(file("a.tsq"))
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => post(q, {}, i % 2 === 0 ? node.baseUrl : other.baseUrl)))
    const serials = responses.map((r) => r.headers.get("x-timestamp-serial"))
    expect(responses.every((r) => r.status === 200)).toBe(true)
    expect(new Set(serials).size).toBe(60)
    const stored = await query<{ n: string }>(node.databaseUrl, `SELECT count(*) AS n FROM timestamp_tokens WHERE serial = ANY($1::bigint[])`, [serials])
    expect(Number(stored[0]!.n)).toBe(60)
  })
})

describe("the TSA certificate checks (anchord doctor, start)", () => {
  /** A self-signed P-256 certificate made by openssl with `extensions` (-addext). */
  const made = (name: string, extensions: ReadonlyArray<string>) => {
    const keyFile = file(`${name}.key`)
    const certFile = file(`${name}.pem`)
    ok(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", `/CN=${name}`, "-days", "30", "-keyout", keyFile, "-out",
      certFile, ...extensions.flatMap((e) => ["-addext", e])])
    return { certFile, keyFile, chainFile: undefined }
  }

  it("the dev certificate passes; a non-critical or missing timeStamping EKU, or the wrong key, is fatal", async () => {
    const dev = await createTsaCertificates(file("doctor-dev"), "rsa")
    expect(tsaFilesReport(dev, new Date())).toMatchObject({ status: "ok", message: expect.stringContaining("RSA") })
    expect(tsaFilesReport(undefined, new Date()).status).toBe("ok")
    const nonCritical = tsaFilesReport(made("noncritical", ["extendedKeyUsage=timeStamping"]), new Date())
    expect(nonCritical.status).toBe("fatal")
    expect(nonCritical.message).toContain("not critical")
    const none = tsaFilesReport(made("none", ["keyUsage=digitalSignature"]), new Date())
    expect(none).toMatchObject({ status: "fatal", message: expect.stringContaining("no extended key usage") })
    const good = made("good", ["extendedKeyUsage=critical,timeStamping", "keyUsage=critical,digitalSignature"])
    // 30 days: valid, and a warning that it ends soon.
    expect(tsaFilesReport(good, new Date()).status).toBe("warn")
    expect(tsaFilesReport({ ...good, keyFile: dev.keyFile }, new Date())).toMatchObject({ status: "fatal", message: expect.stringContaining("does not match") })
    expect(tsaFilesReport(good, new Date(Date.now() + 40 * 86_400_000))).toMatchObject({ status: "fatal", message: expect.stringContaining("expired") })
  })
})

/** The token (ContentInfo) inside a granted TimeStampResp, read with the second library's schema types. */
const tokenOf = (response: Uint8Array): Uint8Array => {
  // TimeStampResp ::= SEQUENCE { PKIStatusInfo, ContentInfo }: skip the outer header and the status.
  const { content } = tlv(response, 0)
  const status = tlv(response, content)
  return response.subarray(status.end, tlv(response, status.end).end)
}

/** The start of the content and the end of the DER element at `offset` (definite lengths). */
const tlv = (bytes: Uint8Array, offset: number) => {
  let length = bytes[offset + 1]!
  let content = offset + 2
  if (length & 0x80) {
    const n = length & 0x7f
    length = 0
    for (let i = 0; i < n; i++) length = length * 256 + bytes[offset + 2 + i]!
    content += n
  }
  return { content, end: content + length }
}
