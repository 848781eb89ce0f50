/**
 * HTTPS in the node (docs/tls.md): the certificate pair from TLS_CERT_FILE / TLS_KEY_FILE, checked
 * before it is used (readable, key matching the certificate, valid now, accepted by OpenSSL), and
 * reloaded without a restart on SIGHUP and when either file changes. A pair that fails a check is
 * never installed: at start the node refuses to start, at a reload the old pair stays (one log line).
 * Messages name files and dates, never key material.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import type * as Https from "node:https"
import * as Tls from "node:tls"
import { Effect, Queue } from "effect"
import { excerpt } from "../excerpt.ts"

/** TLS 1.0 and 1.1 are refused at the handshake. */
export const TLS_MIN_VERSION = "TLSv1.2" as const

export interface TlsFiles {
  readonly certFile: string
  readonly keyFile: string
}

/** A checked pair, ready for `createServer` / `setSecureContext`. */
export interface TlsPair {
  readonly cert: string
  readonly key: string
  /** The leaf certificate's serial number (hex) and validity, for the logs. */
  readonly serial: string
  readonly notBefore: Date
  readonly notAfter: Date
}

/**
 * TLS 1.2's suites: forward secret (ECDHE) and AEAD (GCM, ChaCha20-Poly1305) only, the list of
 * Mozilla's "intermediate" profile without its finite-field DHE: no CBC (Lucky 13 and the padding
 * oracles), no SHA-1 MAC, no RSA key exchange, no ARIA, Camellia or CCM (nothing any current client
 * needs). TLS 1.3's suites are all AEAD and stay OpenSSL's defaults. docs/tls.md, "Protocols and ciphers".
 */
export const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305"
].join(":")

/** `Strict-Transport-Security` on every HTTPS answer: a year, this host only (its siblings are not the node's to speak for). */
export const HSTS = "max-age=31536000"

/** The secure context of a pair: the pair plus the protocol floor and suites (what `setSecureContext` replaces). */
export const secureContextOptions = (pair: TlsPair): Tls.SecureContextOptions => ({
  cert: pair.cert,
  key: pair.key,
  minVersion: TLS_MIN_VERSION,
  ciphers: TLS12_CIPHERS,
  honorCipherOrder: true
})

/** What the https server is created with: HTTP/1.1 only over ALPN (docs/tls.md, "HTTP/2"). */
export const httpsServerOptions = (pair: TlsPair): Https.ServerOptions => ({ ...secureContextOptions(pair), ALPNProtocols: ["http/1.1"] })

const reason = (error: unknown) => excerpt((error as NodeJS.ErrnoException)?.code ?? String((error as Error)?.message ?? error), 200)

/** Reads and checks the pair: a {@link TlsPair}, or a message saying what is wrong (no key material in it). */
export const loadTlsPair = (files: TlsFiles, now: Date): TlsPair | string => {
  let cert: string
  let key: string
  try {
    cert = Fs.readFileSync(files.certFile, "utf8")
  } catch (error) {
    return `cannot read TLS_CERT_FILE ${files.certFile}: ${reason(error)}`
  }
  try {
    key = Fs.readFileSync(files.keyFile, "utf8")
  } catch (error) {
    return `cannot read TLS_KEY_FILE ${files.keyFile}: ${reason(error)}`
  }
  let leaf: Crypto.X509Certificate
  try {
    // The first certificate of the file is the server's own; any that follow are its chain.
    leaf = new Crypto.X509Certificate(cert)
  } catch {
    return `TLS_CERT_FILE ${files.certFile} holds no PEM certificate`
  }
  let privateKey: Crypto.KeyObject
  try {
    privateKey = Crypto.createPrivateKey(key)
  } catch {
    return `TLS_KEY_FILE ${files.keyFile} holds no unencrypted PEM private key`
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    return `TLS_KEY_FILE ${files.keyFile} is not the key of the certificate in TLS_CERT_FILE ${files.certFile} (serial ${leaf.serialNumber})`
  }
  const notBefore = new Date(leaf.validFrom)
  const notAfter = new Date(leaf.validTo)
  if (now.getTime() > notAfter.getTime()) {
    return `the certificate in TLS_CERT_FILE ${files.certFile} (serial ${leaf.serialNumber}) expired on ${notAfter.toISOString()}`
  }
  if (now.getTime() < notBefore.getTime()) {
    return `the certificate in TLS_CERT_FILE ${files.certFile} (serial ${leaf.serialNumber}) is not valid before ${notBefore.toISOString()}`
  }
  const pair: TlsPair = { cert, key, serial: leaf.serialNumber, notBefore, notAfter }
  try {
    // What the server will do with it (an unusable chain, a key type OpenSSL refuses): refused now, not at a handshake.
    Tls.createSecureContext(secureContextOptions(pair))
  } catch (error) {
    return `TLS_CERT_FILE ${files.certFile} / TLS_KEY_FILE ${files.keyFile} refused by OpenSSL: ${reason(error)}`
  }
  return pair
}

/**
 * The pair's refusal at start, before anything else is started (the database, the chains): the same
 * check the server makes, as one line for the operator. Undefined when TLS is off or the pair is good.
 */
export const tlsStartRefusal = (tls: TlsFiles | undefined, now: Date): string | undefined => {
  if (tls === undefined) return undefined
  const pair = loadTlsPair(tls, now)
  return typeof pair === "string" ? `HTTPS: ${pair}` : undefined
}

/**
 * Reloads the pair into `server` on SIGHUP and whenever either file's mtime or size changes (polled
 * every `intervalMillis`: a bounded stat of two files, which also sees the symlink swap of a
 * Kubernetes secret, where fs.watch would not). Installed only if it passes {@link loadTlsPair};
 * otherwise one WARN line and the old pair stays. Connections already open keep the context they
 * were made with; new handshakes use the new one. Scoped: the watchers go with the scope.
 */
export const watchTlsPair = Effect.fn("Tls.watchTlsPair")(function*(
  server: Tls.Server,
  files: TlsFiles,
  initial: TlsPair,
  intervalMillis: number,
  /** Told of the pair served, at start and at each reload (the certificate-expiry metric). */
  onInstalled?: (pair: TlsPair) => void
) {
  const triggers = yield* Queue.sliding<string>(1)
  const poke = (why: string) => () => void Queue.offerUnsafe(triggers, why)
  const onHup = poke("SIGHUP")
  const onChange = poke("file changed")
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      process.on("SIGHUP", onHup)
      Fs.watchFile(files.certFile, { interval: intervalMillis, persistent: false }, onChange)
      Fs.watchFile(files.keyFile, { interval: intervalMillis, persistent: false }, onChange)
    }),
    () =>
      Effect.sync(() => {
        process.off("SIGHUP", onHup)
        Fs.unwatchFile(files.certFile, onChange)
        Fs.unwatchFile(files.keyFile, onChange)
      })
  )
  onInstalled?.(initial)
  let current = initial
  /** The last refused state of the files: a poll seeing it again (the other file's mtime moved) logs nothing more. */
  let refused: string | undefined
  const reload = Effect.gen(function*() {
    const why = yield* Queue.take(triggers)
    // Both files are usually replaced one after the other: let the second land before reading.
    yield* Effect.sleep("200 millis")
    yield* Queue.clear(triggers)
    const now = new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis))
    const pair = loadTlsPair(files, now)
    if (typeof pair === "string") {
      if (why !== "SIGHUP" && pair === refused) return
      refused = pair
      return yield* Effect.logWarning(
        `TLS certificate not reloaded (${why}): ${pair}; keeping serial ${current.serial}, valid until ${current.notAfter.toISOString()}`
      )
    }
    refused = undefined
    if (pair.cert === current.cert && pair.key === current.key) return
    server.setSecureContext(secureContextOptions(pair))
    current = pair
    onInstalled?.(pair)
    yield* Effect.logInfo("TLS certificate reloaded", { why, serial: pair.serial, notAfter: pair.notAfter.toISOString() })
  })
  yield* Effect.forkScoped(Effect.forever(reload))
})
