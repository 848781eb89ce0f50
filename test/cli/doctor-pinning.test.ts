/**
 * `anchord doctor --webhook-test-url` connects where its policy check said it would (src/doctor/webhookTarget.ts):
 * the name is resolved by the node's WebhookResolver (standing in for DNS here, as in test/webhooks/ssrf.test.ts)
 * and the policy applied again to the address connected to. A rebinding answer (public at the check,
 * loopback at the connection) reaches nothing; a name only the resolver knows is reached at its address.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Https from "node:https"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { webhookTargetCheck } from "../../src/doctor/webhookTarget.ts"
import { type Resolve, WebhookResolver } from "../../src/webhooks/urlPolicy.ts"

const check = (url: string, resolve: Resolve, options: { allowPrivate?: string; caFile?: string } = {}) =>
  Effect.runPromise(
    webhookTargetCheck(url, { allowPrivate: options.allowPrivate, caFile: options.caFile, timeoutMillis: 8_000 }).pipe(
      Effect.provideService(WebhookResolver, resolve)
    )
  )

describe("anchord doctor --webhook-test-url connects to the address it checked", { timeout: 30_000 }, () => {
  let dir: string
  let internal: Net.Server
  let internalPort: number
  let connections = 0
  let receiver: Https.Server
  let receiverPort: number
  const received: Array<{ host: string | undefined; body: string }> = []

  beforeAll(async () => {
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-doctor-pin-"))
    // An "internal service" on loopback: any connection to it, even a TLS ClientHello, is the leak.
    internal = Net.createServer((socket) => {
      connections++
      socket.destroy()
    })
    await new Promise<void>((resolve) => internal.listen(0, "127.0.0.1", resolve))
    internalPort = (internal.address() as Net.AddressInfo).port
    // A receiver under a name no system resolver knows, with a certificate for that name.
    const r = ChildProcess.spawnSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
      `${dir}/receiver.key`, "-out", `${dir}/receiver.pem`, "-subj", "/CN=hooks.doctor.test", "-addext", "subjectAltName=DNS:hooks.doctor.test", "-days", "2"],
      { encoding: "utf8" })
    if (r.status !== 0) throw new Error(r.stderr)
    receiver = Https.createServer({ key: Fs.readFileSync(`${dir}/receiver.key`), cert: Fs.readFileSync(`${dir}/receiver.pem`) }, (req, res) => {
      let body = ""
      req.on("data", (c) => body += c)
      req.on("end", () => {
        received.push({ host: req.headers.host, body })
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    receiverPort = (receiver.address() as Net.AddressInfo).port
  })
  afterAll(async () => {
    await new Promise((resolve) => internal?.close(resolve))
    receiver?.closeAllConnections()
    await new Promise((resolve) => receiver?.close(resolve))
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("a name that is public at the check and loopback at the connection: fatal, and nothing reaches the loopback service", async () => {
    // This machine's own name, which its system resolver (/etc/hosts) answers with a loopback address:
    // a fetch that looked the name up again by itself would connect there.
    let lookups = 0
    const rebinding: Resolve = async () => lookups++ === 0 ? [{ address: "93.184.216.34", family: 4 }] : [{ address: "127.0.0.1", family: 4 }]
    const result = await check(`https://${Os.hostname()}:${internalPort}/hook`, rebinding)
    expect(result).toMatchObject({
      check: "webhook-target",
      status: "fatal",
      message: expect.stringMatching(/^the policy refuses the address it connects to: .* not public \(loopback\)/)
    })
    expect(lookups).toBe(2)
    // Let a connection, had one been made, be counted.
    await new Promise((r) => setTimeout(r, 200))
    expect(connections).toBe(0)
  })

  it("a name only the node's resolver knows is reached at the address it gave (and checked), with WEBHOOK_CA_FILE trusted", async () => {
    const resolve: Resolve = async (host) => host === "hooks.doctor.test" ? [{ address: "127.0.0.1", family: 4 }] : []
    const result = await check(`https://hooks.doctor.test:${receiverPort}/hook`, resolve, { allowPrivate: "127.0.0.1", caFile: `${dir}/receiver.pem` })
    expect(result).toEqual({ check: "webhook-target", status: "ok", message: "answered 204 to an unsigned test POST", fix: "" })
    expect(received).toEqual([{ host: `hooks.doctor.test:${receiverPort}`, body: JSON.stringify({ type: "doctor.test" }) }])
  })

  it("a WEBHOOK_CA_FILE that holds no certificate: fatal, nothing sent", async () => {
    Fs.writeFileSync(`${dir}/empty.pem`, "nothing\n")
    const resolve: Resolve = async () => [{ address: "127.0.0.1", family: 4 }]
    const before = received.length
    const result = await check(`https://hooks.doctor.test:${receiverPort}/hook`, resolve, { allowPrivate: "127.0.0.1", caFile: `${dir}/empty.pem` })
    expect(result).toMatchObject({ status: "fatal", message: expect.stringMatching(/WEBHOOK_CA_FILE .* holds no PEM certificate/) })
    expect(received.length).toBe(before)
  })
})
