/**
 * HTTPS in the node (docs/tls.md), with certificates made here by the openssl CLI: a CA of the test's
 * own, two pairs for 127.0.0.1/localhost (rotation), one for another host, an expired one and one not
 * yet valid. Real clients: curl --cacert and node:https with `ca`. Webhooks to an HTTPS receiver of
 * the test's own behind the same private CA, with and without WEBHOOK_CA_FILE. Loopback only.
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Https from "node:https"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Tls from "node:tls"
import { Layer, Logger, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NodeLayer } from "../../src/app/layers.ts"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { query } from "../support/db.ts"
import { MetricsListener } from "../../src/app/metrics.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"
import { startWebhookNode, type WebhookNode } from "../webhooks/support.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-tls-"))
const file = (name: string) => Path.join(dir, name)
const openssl = (...args: Array<string>) => ChildProcess.execFileSync("/usr/bin/openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })

/** A key and a certificate request for `name`, signed by the CA with these SANs and serial (or by `openssl ca` for set dates). */
const issue = (name: string, serial: string, san: string, dates?: { start: string; end: string }) => {
  Fs.writeFileSync(file(`${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`)
  openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj",
    `/CN=${name}`)
  if (dates === undefined) {
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", serial, "-days", "2", "-extfile", `${name}.ext`, "-out",
      `${name}.pem`)
  } else {
    Fs.writeFileSync(file("serial"), `${serial.replace(/^0x/, "")}\n`)
    openssl("ca", "-batch", "-config", "ca.cnf", "-in", `${name}.csr`, "-out", `${name}.pem`, "-notext", "-startdate", dates.start, "-enddate", dates.end,
      "-extfile", `${name}.ext`)
  }
}

const makeCertificates = () => {
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj",
    "/CN=anchord test CA")
  Fs.writeFileSync(file("index.txt"), "")
  Fs.writeFileSync(file("ca.cnf"), [
    "[ca]",
    "default_ca = test",
    "[test]",
    `dir = ${dir}`,
    `database = ${file("index.txt")}`,
    `new_certs_dir = ${dir}`,
    `certificate = ${file("ca.pem")}`,
    `private_key = ${file("ca.key")}`,
    `serial = ${file("serial")}`,
    "default_md = sha256",
    "policy = any",
    "unique_subject = no",
    "[any]",
    "commonName = supplied"
  ].join("\n"))
  const here = "IP:127.0.0.1,DNS:localhost"
  issue("one", "0x1001", here)
  // Valid a day longer than "one": the expiry metric tells them apart.
  const stamp = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().replace(/[-:T]|\.\d+/g, "")
  issue("two", "0x1002", here, { start: stamp(-1), end: stamp(3) })
  issue("wronghost", "0x1003", "DNS:wrong.example")
  issue("expired", "0x1004", here, { start: "20200101000000Z", end: "20200102000000Z" })
  issue("future", "0x1005", here, { start: "20991231000000Z", end: "21000101000000Z" })
}

/** Puts pair `name` where the node reads its certificate (each file replaced atomically, the key first). */
const install = (name: string, live = "live") => {
  Fs.copyFileSync(file(`${name}.key`), file(`${live}.key.tmp`))
  Fs.renameSync(file(`${live}.key.tmp`), file(`${live}.key`))
  Fs.copyFileSync(file(`${name}.pem`), file(`${live}.pem.tmp`))
  Fs.renameSync(file(`${live}.pem.tmp`), file(`${live}.pem`))
}

const curl = (...args: Array<string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    ChildProcess.execFile("curl", ["-sS", "--max-time", "10", ...args],
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? -1), stdout, stderr }))
  })

interface Answer {
  readonly status: number
  readonly body: string
  readonly serial: string
  readonly socket: Tls.TLSSocket
  readonly headers: Record<string, string | Array<string> | undefined>
}

/** One request over node:https; the certificate's serial as the client saw it. */
const request = (url: string, options: Https.RequestOptions & { body?: string } = {}) =>
  new Promise<Answer>((resolve, reject) => {
    const req = Https.request(url, { ca: Fs.readFileSync(file("ca.pem")), ...options }, (res) => {
      const socket = res.socket as Tls.TLSSocket
      const serial = socket.getPeerCertificate().serialNumber
      let body = ""
      res.on("data", (c) => body += c)
      res.on("end", () => resolve({ status: res.statusCode!, body, serial, socket, headers: res.headers }))
    })
    req.on("error", reject)
    req.end(options.body)
  })

const serialOf = (name: string) => new Crypto.X509Certificate(Fs.readFileSync(file(`${name}.pem`))).serialNumber
const expiryOf = (name: string) => new Date(new Crypto.X509Certificate(Fs.readFileSync(file(`${name}.pem`))).validTo).getTime() / 1000

beforeAll(makeCertificates)
afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

describe("HTTPS", () => {
  let node: TestNode
  let base: string
  let plainPort: number
  const logged: Array<string> = []
  const tlsLines = () => logged.filter((l) => l.includes("TLS certificate"))

  beforeAll(async () => {
    install("one")
    plainPort = await freePort()
    const capture = Logger.make<unknown, void>(({ message }) => {
      logged.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    })
    node = await startNode({
      config: {
        tls: Option.some({ certFile: file("live.pem"), keyFile: file("live.key") }),
        tlsPlainPort: Option.some(plainPort),
        tlsWatchIntervalMillis: 100,
        metricsPort: Option.some(0)
      },
      layer: NodeLayer.pipe(Layer.provide(Logger.layer([capture, Logger.consolePretty()]))),
      evmUnserved: true
    })
    base = node.baseUrl.replace(/^http:/, "https:")
  }, 120_000)

  afterAll(async () => {
    await node?.stop()
  })

  it("answers over TLS to curl --cacert and node:https with `ca`: health, and a record with a key", async () => {
    const health = await curl("--cacert", file("ca.pem"), `${base}/v1/health`)
    expect(health.code).toBe(0)
    expect(JSON.parse(health.stdout).success).toBe(true)
    const { key } = await node.createKey(await node.createAccount())
    const body = JSON.stringify({ data: { over: "tls" } })
    const created = await request(`${base}/v1/anchor`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body
    })
    expect(created.status).toBe(202)
    expect(JSON.parse(created.body).data.recordId).toMatch(/^[0-9a-f]{24}$/)
    // Browsers are told to stay on HTTPS (every answer, errors too).
    expect(created.headers["strict-transport-security"]).toBe("max-age=31536000")
    expect((await request(`${base}/v1/no-such-route`)).headers["strict-transport-security"]).toBe("max-age=31536000")
    expect(created.serial).toBe(serialOf("one"))
    expect(created.socket.getProtocol()).toMatch(/^TLSv1\.[23]$/)
    // HTTP/1.1 only over ALPN (docs/tls.md, "HTTP/2"): a client offering h2 gets http/1.1.
    expect(created.socket.alpnProtocol).toBe(false)
    const alpn = await curl("--cacert", file("ca.pem"), "-o", "/dev/null", "-w", "%{http_version}", "--http2", `${base}/v1/health`)
    expect(alpn.stdout).toBe("1.1")
    // The OpenAPI document's servers: this node, relative, and its public base with the scheme it serves.
    const openapi = JSON.parse((await request(`${base}/v1/openapi.json`)).body)
    expect(openapi.servers.map((s: { url: string }) => s.url)).toEqual(["/", base])
    // Without the CA the client refuses the node (no silent trust).
    expect((await curl(`${base}/v1/health`)).code).toBe(60)
  })

  it("refuses TLS 1.1 and below: the node's alert, to clients that would accept it", async () => {
    // The clients' own OpenSSL floor lowered (SECLEVEL=0 allows TLS 1.0/1.1), so the refusal seen is the node's.
    const old = await curl("--cacert", file("ca.pem"), "--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT:@SECLEVEL=0", `${base}/v1/health`)
    expect(old.code).toBe(35)
    expect(old.stderr).toMatch(/alert protocol version/)
    await expect(request(`${base}/v1/health`, { agent: false, maxVersion: "TLSv1.1", minVersion: "TLSv1", ciphers: "DEFAULT:@SECLEVEL=0" }))
      .rejects.toThrow(/alert protocol version/)
  })

  it("TLS 1.2 offers forward-secret AEAD suites only: a client offering only CBC (SHA-1 or SHA-384), ARIA or CCM is refused", async () => {
    const { port } = new URL(base)
    // openssl s_client offering one TLS 1.2 suite (the test's certificate is ECDSA, so the ECDSA variants).
    const offer = (cipher: string) =>
      new Promise<string>((resolve) => {
        const child = ChildProcess.execFile("/usr/bin/openssl", ["s_client", "-connect", `127.0.0.1:${port}`, "-tls1_2", "-cipher", cipher, "-CAfile",
          file("ca.pem")], { timeout: 10_000 }, (_error, stdout, stderr) => resolve(`${stdout}${stderr}`))
        child.stdin?.end()
      })
    for (const cipher of ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-ARIA128-GCM-SHA256", "ECDHE-ECDSA-AES128-CCM"]) {
      const out = await offer(cipher)
      expect(out, cipher).toMatch(/handshake failure/)
      expect(out, cipher).toMatch(/Cipher is \(NONE\)/)
    }
    expect(await offer("ECDHE-ECDSA-AES128-GCM-SHA256")).toMatch(/New, TLSv1\.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256/)
    const modern = await request(`${base}/v1/health`, { agent: false, maxVersion: "TLSv1.2" })
    expect([modern.status, modern.socket.getProtocol()]).toEqual([200, "TLSv1.2"])
    expect(modern.socket.getCipher().name).toMatch(/^ECDHE-ECDSA-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/)
  })

  it("links follow the scheme: without PUBLIC_URL the base of links is https://HOST:PORT; the request counts as HTTPS", async () => {
    const { publicBaseUrl, requestIsHttps } = await import("../../src/http/publicUrl.ts")
    const port = Number(new URL(base).port)
    const request = { source: { socket: { localPort: port, encrypted: true } }, headers: {}, remoteAddress: Option.none() } as never
    const config = { baseUrl: Option.none(), host: "127.0.0.1", port: 0, tls: Option.some({ certFile: "c", keyFile: "k" }),
      trustProxy: { _tag: "Off" } } as const
    expect(publicBaseUrl(request, config)).toBe(base)
    expect(publicBaseUrl(request, { ...config, tls: Option.none() })).toBe(base.replace("https:", "http:"))
    expect(requestIsHttps(request, config)).toBe(true)
  })

  it("rotates without a restart: a live keep-alive connection still answered, new connections see the new serial", async () => {
    const agent = new Https.Agent({ keepAlive: true, maxSockets: 1, ca: Fs.readFileSync(file("ca.pem")) })
    const before = await request(`${base}/v1/health`, { agent })
    expect(before.serial).toBe(serialOf("one"))
    // /metrics says when the served certificate expires (docs/metrics.md; the alert AnchordTlsCertificateExpiring).
    const metricsUrl = Option.getOrThrow((await node.runtime.runPromise(MetricsListener)).url)
    const expiry = async () => Number(/^anchord_tls_certificate_expiry_timestamp_seconds (\S+)$/m.exec(await (await fetch(metricsUrl)).text())?.[1])
    expect(await expiry()).toBe(expiryOf("one"))
    install("two")
    await waitFor("the new certificate on new connections", async () => (await request(`${base}/v1/health`, { agent: false })).serial === serialOf("two"))
    // The keep-alive connection made before the rotation is the same socket, still answered.
    const after = await request(`${base}/v1/health`, { agent })
    expect(after.socket).toBe(before.socket)
    expect(after.status).toBe(200)
    expect(after.serial).toBe(serialOf("one"))
    agent.destroy()
    expect(tlsLines().filter((l) => l.includes("reloaded")).length).toBeGreaterThanOrEqual(1)
    expect(await expiry()).toBe(expiryOf("two"))
  })

  it("a client refuses a certificate for another host (curl exit 60, ERR_TLS_CERT_ALTNAME_INVALID)", async () => {
    install("wronghost")
    await waitFor("the wrong-host certificate served", async () => {
      const r = await curl("--cacert", file("ca.pem"), `${base}/v1/health`)
      return r.code === 60 && r.stderr.includes("subject")
    })
    await expect(request(`${base}/v1/health`, { agent: false })).rejects.toMatchObject({ code: "ERR_TLS_CERT_ALTNAME_INVALID" })
    install("one")
    await waitFor("serial one again", async () => (await request(`${base}/v1/health`, { agent: false }).catch(() => undefined))?.serial === serialOf("one"))
  })

  it("refuses an expired, a not-yet-valid and a mismatched pair at rotation: one WARN line each, the old pair kept", async () => {
    for (const [name, expected] of [["expired", "expired on 2020-01-02"], ["future", "is not valid before 2099-12-31"]] as const) {
      const before = tlsLines().length
      install(name)
      await waitFor(`the ${name} pair refused`, async () => tlsLines().length > before)
      const lines = tlsLines().slice(before)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain("TLS certificate not reloaded")
      expect(lines[0]).toContain(expected)
      expect(lines[0]).toContain(`keeping serial ${serialOf("one")}`)
      expect((await request(`${base}/v1/health`, { agent: false })).serial).toBe(serialOf("one"))
    }
    // A key that is not the certificate's (the certificate of pair two with the key of pair one).
    const before = tlsLines().length
    Fs.copyFileSync(file("one.key"), file("live.key"))
    Fs.copyFileSync(file("two.pem"), file("live.pem"))
    await waitFor("the mismatched pair refused", async () => tlsLines().length > before)
    expect(tlsLines().slice(before).join("\n")).toContain("is not the key of the certificate")
    expect((await request(`${base}/v1/health`, { agent: false })).serial).toBe(serialOf("one"))
    // No key material in any line.
    expect(logged.join("\n")).not.toContain("PRIVATE KEY")
    install("one")
  })

  it("the plain port redirects GET/HEAD (308, to https on the listener, never the Host header) and answers 426 otherwise", async () => {
    const plain = `http://127.0.0.1:${plainPort}`
    const get = await fetch(`${plain}/v1/health?x=1`, { redirect: "manual", headers: { host: "evil.example" } })
    expect(get.status).toBe(308)
    expect(get.headers.get("location")).toBe(`${base}/v1/health?x=1`)
    const head = await fetch(`${plain}/console`, { method: "HEAD", redirect: "manual" })
    expect(head.status).toBe(308)
    expect(head.headers.get("location")).toBe(`${base}/console`)
    // An absolute-form target never names the redirect's host.
    const absolute = await curl("-o", "/dev/null", "-w", "%{redirect_url}", "--request-target", "http://evil.example/x", `${plain}/`)
    expect(absolute.stdout).toBe(`${base}/`)
    const post = await fetch(`${plain}/v1/anchor`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(post.status).toBe(426)
    expect(post.headers.get("upgrade")).toBe("TLS/1.2, HTTP/1.1")
    expect(await post.json()).toMatchObject({ success: false, errorCode: "HTTPS_REQUIRED" })
  })
})

describe("HTTPS reload on SIGHUP", () => {
  it("a node that polls its files only hourly takes the new pair at SIGHUP", async () => {
    install("one", "hup")
    const node = await startNode({
      config: { tls: Option.some({ certFile: file("hup.pem"), keyFile: file("hup.key") }), tlsWatchIntervalMillis: 3_600_000 }
    })
    try {
      const base = node.baseUrl.replace(/^http:/, "https:")
      expect((await request(`${base}/v1/health`, { agent: false })).serial).toBe(serialOf("one"))
      install("two", "hup")
      // Polled hourly: the change is not seen by itself (checked once before the signal)...
      expect((await request(`${base}/v1/health`, { agent: false })).serial).toBe(serialOf("one"))
      process.kill(process.pid, "SIGHUP")
      await waitFor("serial two after SIGHUP", async () => (await request(`${base}/v1/health`, { agent: false })).serial === serialOf("two"))
    } finally {
      await node.stop()
    }
  })
})

describe("HTTPS at start", () => {
  it("refuses to start on an expired pair, naming the file and the date", async () => {
    await expect(startNode({ config: { tls: Option.some({ certFile: file("expired.pem"), keyFile: file("expired.key") }) } }))
      .rejects.toThrow(/HTTPS: the certificate in TLS_CERT_FILE .*expired\.pem .* expired on 2020-01-02/)
  })
  it("refuses to start on one of the two variables alone", async () => {
    const { AppConfig } = await import("../../src/config.ts")
    const { ConfigProvider, Effect } = await import("effect")
    const read = (env: Record<string, string>) => Effect.runPromise(Effect.flip(AppConfig.config.parse(ConfigProvider.fromUnknown(env)))).then(String)
    expect(await read({ TLS_CERT_FILE: "/x.pem" })).toContain("TLS_CERT_FILE is set but TLS_KEY_FILE is not")
    expect(await read({ TLS_KEY_FILE: "/x.key" })).toContain("TLS_KEY_FILE is set but TLS_CERT_FILE is not")
    expect(await read({ TLS_PLAIN_PORT: "8081" })).toContain("TLS_PLAIN_PORT is set but TLS is off")
  })
})

describe("webhooks to an HTTPS receiver behind a private CA (WEBHOOK_CA_FILE)", () => {
  let receiver: Https.Server
  let hookUrl: string
  const received: Array<string> = []

  beforeAll(async () => {
    receiver = Https.createServer({ cert: Fs.readFileSync(file("one.pem")), key: Fs.readFileSync(file("one.key")) }, (req, res) => {
      req.resume()
      req.on("end", () => {
        received.push(req.url ?? "")
        res.end("ok")
      })
    })
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
    hookUrl = `https://127.0.0.1:${(receiver.address() as { port: number }).port}`
  })
  afterAll(async () => {
    receiver?.closeAllConnections()
    await new Promise((r) => receiver?.close(r))
    delete process.env.WEBHOOK_CA_FILE
  })

  /** A record with a webhook URL on the receiver, then a PATCH (record.updated): its delivery's outcome. */
  const deliverOnce = async (node: WebhookNode, path: string) => {
    const key = await node.createKey(await node.createAccount())
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const created = await (await fetch(`${node.baseUrl}/v1/anchor`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ data: { n: 1 }, webhookUrl: `${hookUrl}${path}`, packageMode: "IN_PLACE" })
    })).json() as { data: { recordId: string } }
    const recordId = created.data.recordId
    expect((await fetch(`${node.baseUrl}/v1/records/${recordId}`, { method: "PATCH", headers: auth, body: JSON.stringify({ metadata: { k: "v" } }) })).status)
      .toBe(200)
    return recordId
  }

  it("delivers with the CA file", async () => {
    const node = await startWebhookNode({ env: { WEBHOOK_CA_FILE: file("ca.pem") } })
    try {
      await deliverOnce(node, "/with-ca")
      await waitFor("the delivery over https", async () => received.includes("/with-ca"))
    } finally {
      await node.stop()
    }
  })

  it("is refused without it (the receiver's CA is not a system root)", async () => {
    delete process.env.WEBHOOK_CA_FILE
    const node = await startWebhookNode({ env: {} })
    try {
      const recordId = await deliverOnce(node, "/without-ca")
      const error = await waitFor("a failed attempt", async () =>
        (await query<{ error: string | null }>(node.databaseUrl,
          `SELECT a.error FROM webhook_attempts a JOIN webhook_deliveries d ON d.seq = a.delivery_seq WHERE d.record_id = $1`, [recordId]))[0]?.error)
      expect(error).toMatch(/connection error: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/)
      expect(received).not.toContain("/without-ca")
    } finally {
      await node.stop()
    }
  })
})
