/**
 * `anchord verify <file> [--rpc URL] [--data file] [--fabric-profile file] [--json]` (SPEC 8): the auditor's command.
 * Needs no database and no node; it reads the chains directly. With `--tsr token.tsr --data file --ca ca.pem`
 * it checks an RFC 3161 token and its anchor (./timestamp.ts; the bundle from <file> or `--node`). Exit codes: 0 verified,
 * 1 not verified, 2 could not check (unreadable input, RPC unreachable, no identity for Fabric).
 * Imported by src/cli/main.ts, which loads only this (not the node) for `verify`.
 */
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
// Sub-module imports (not the "effect" barrel): `anchord verify` must start fast (scripts/bench-verify.ts).
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { parseStrictJson } from "../canonical/strictJson.ts"
import { rpcClient } from "./evm.ts"
import { readInput, saltedCommitment } from "./input.ts"
import { formatReport } from "./report.ts"
import { verifyInput } from "./verify.ts"
import { verifyReceipt } from "./receipt.ts"
import { recordHash } from "../canonical/jcs.ts"

const optionalString = (name: string, description: string) => Flag.String(name).pipe(Flag.optional, Flag.withDescription(description))

/** A Fabric connection profile: what the `--fabric-*` flags say, in one file (paths relative to it). */
export interface FabricProfile {
  readonly peerEndpoint?: string
  readonly mspId?: string
  readonly certPath?: string
  readonly keyPath?: string
  readonly tlsCertPath?: string
  readonly hostAlias?: string
  readonly channel?: string
  readonly chaincode?: string
}

export const readFabricProfile = (file: string): FabricProfile => {
  const json = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>
  const dir = dirname(resolve(file))
  const out: Record<string, string> = {}
  for (const key of ["peerEndpoint", "mspId", "certPath", "keyPath", "tlsCertPath", "hostAlias", "channel", "chaincode"]) {
    const v = json[key]
    if (v === undefined || v === null) continue
    if (typeof v !== "string") throw new Error(`${key}: expected a string`)
    out[key] = key.endsWith("Path") ? resolve(dir, v) : v
  }
  return out
}

const readJson = (path: string): unknown => parseStrictJson(path === "-" ? readFileSync(0, "utf8") : readFileSync(path, "utf8"), { maxDepth: 128 })

export const verifyCommand = Command.make("verify", {
  file: Argument.String("file").pipe(
    Argument.withDescription(
      "Proof bundle, IN_PLACE document or record lookup (JSON; - for stdin); with --tsr: the token's proof bundle or GET /v1/timestamp/{serial}'s answer"
    ),
    Argument.optional
  ),
  rpc: optionalString("rpc", "JSON-RPC URL of the EVM chain the anchor names"),
  data: optionalString("data", "JSON file with the record's data, hashed with JCS + SHA-256; with --tsr: the time-stamped file, hashed as bytes"),
  tsr: optionalString("tsr", "An RFC 3161 TimeStampResp (.tsr) or token to check (with --data and --ca) and its anchor"),
  ca: optionalString("ca", "With --tsr: PEM file of the CA(s) the TSA certificate must chain to"),
  node: optionalString("node",
    "With --tsr and no <file>: fetch the token's proof bundle from this node's GET /v1/timestamp/{serial} (the API key: --api-key or ANCHORD_API_KEY)"),
  apiKey: optionalString("api-key", "With --node: the API key of the token's account (default: ANCHORD_API_KEY)"),
  receipt: optionalString("receipt",
    "A COSE Receipt (RFC 9942, GET /v1/records/{id}/receipt) to check, with --receipt-key and --data (or --hash), and its root on chain (--rpc)"),
  receiptKey: optionalString("receipt-key", "With --receipt: the node's receipt public key, PEM (its /.well-known/anchord-receipt-key.pem)"),
  hash: optionalString("hash", "With --receipt or --tlog-proof and no --data: the record hash (64 hex) as stated, not recomputed"),
  tlogProof: optionalString("tlog-proof",
    "A C2SP tlog-proof (GET /v1/records/{id}/log-proof) to check, with --log-key and --data (or --hash), and its checkpoint on chain (--rpc)"),
  logKey: optionalString("log-key", "With --tlog-proof: the log's verifier key (<origin>+<key id>+<key>, printed by the node's banner)"),
  salt: optionalString("salt", "A salted encrypted record's salt (base64url): --data is then hashed as {\"data\": <data>, \"salt\": <salt>}"),
  json: Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print the report as JSON")),
  confirmations: Flag.Int("confirmations").pipe(Flag.withDefault(1), Flag.withDescription("Blocks required on top of the anchor's block, including it")),
  offline: Flag.Boolean("offline").pipe(Flag.withDefault(false), Flag.withDescription("Check only the hash and the Merkle proof")),
  timeout: Flag.Int("timeout-ms").pipe(Flag.withDefault(10_000), Flag.withDescription("Per-request timeout")),
  fabricProfile: optionalString(
    "fabric-profile",
    "JSON connection profile (peerEndpoint, mspId, certPath, keyPath, tlsCertPath, hostAlias, channel, chaincode); flags win over it. `npm start` writes one: <dataDir>/fabric-profile.json"
  ),
  fabricEndpoint: optionalString("fabric-endpoint", "Fabric gateway peer host:port"),
  fabricMspId: optionalString("fabric-msp-id", "MSP id of your Fabric identity"),
  fabricCert: optionalString("fabric-cert", "PEM certificate of your Fabric identity"),
  fabricKey: optionalString("fabric-key", "PEM private key of your Fabric identity"),
  fabricTlsCert: optionalString("fabric-tls-cert", "PEM TLS root certificate of the peer (plaintext without it)"),
  fabricHostAlias: optionalString("fabric-host-alias", "TLS server name of the peer"),
  fabricChannel: optionalString("fabric-channel", "Channel, if the bundle names none"),
  fabricChaincode: optionalString("fabric-chaincode", "Chaincode, if the bundle names none")
}, (o) =>
  Effect.gen(function*() {
    const get = Option.getOrUndefined
    const fabricOptions = (profile: FabricProfile) => ({
      endpoint: get(o.fabricEndpoint) ?? profile.peerEndpoint,
      mspId: get(o.fabricMspId) ?? profile.mspId,
      certPath: get(o.fabricCert) ?? profile.certPath,
      keyPath: get(o.fabricKey) ?? profile.keyPath,
      tlsCertPath: get(o.fabricTlsCert) ?? profile.tlsCertPath,
      hostAlias: get(o.fabricHostAlias) ?? profile.hostAlias,
      channel: get(o.fabricChannel) ?? profile.channel,
      chaincode: get(o.fabricChaincode) ?? profile.chaincode,
      timeoutMs: o.timeout
    })
    const couldNotCheck = (message: string) =>
      Effect.gen(function*() {
        yield* o.json
          ? Console.log(JSON.stringify({ outcome: "could-not-check", exitCode: 2, error: message }, null, 2))
          : Console.error(`error: ${message}\nCOULD NOT CHECK (exit 2)`)
        process.exitCode = 2
      })
    const tlogProofFile = get(o.tlogProof)
    if (tlogProofFile !== undefined) {
      let text: string
      let hash: string
      let hashSource: "data" | "bundle"
      try {
        const logKey = get(o.logKey)
        if (logKey === undefined) throw new Error("--tlog-proof needs --log-key (the log's verifier key)")
        text = readFileSync(tlogProofFile === "-" ? 0 : tlogProofFile, "utf8")
        const dataFile = get(o.data)
        const given = get(o.hash)
        if (dataFile === undefined && given === undefined) throw new Error("--tlog-proof needs --data (the record's data, hashed) or --hash")
        let data = dataFile === undefined ? undefined : readJson(dataFile)
        const salt = get(o.salt)
        if (salt !== undefined) {
          if (data === undefined) throw new Error("--salt needs --data (the salt is hashed with the data)")
          data = saltedCommitment(data, salt)
        }
        hash = data === undefined ? given!.toLowerCase().replace(/^0x/, "") : recordHash(data)
        if (!/^[0-9a-f]{64}$/.test(hash)) throw new Error("--hash: a record hash is 64 hex digits")
        hashSource = data === undefined ? "bundle" : "data"
      } catch (e) {
        return yield* couldNotCheck(e instanceof Error ? e.message : String(e))
      }
      const rpcUrl = get(o.rpc)
      // Loaded only here: reading the contract's events needs viem, which a bundle's verify does not.
      const { verifyTlogProof } = yield* Effect.promise(() => import("./tlogProof.ts"))
      const report = yield* verifyTlogProof({
        text,
        logKey: get(o.logKey)!,
        hash,
        hashSource,
        rpc: rpcUrl === undefined ? undefined : rpcClient(rpcUrl, o.timeout),
        minConfirmations: o.confirmations,
        offline: o.offline
      })
      yield* Console.log(o.json ? JSON.stringify(report, null, 2) : formatReport(report))
      process.exitCode = report.exitCode
      return
    }
    const receiptFile = get(o.receipt)
    if (receiptFile !== undefined) {
      let input
      try {
        const keyFile = get(o.receiptKey)
        if (keyFile === undefined) throw new Error("--receipt needs --receipt-key (the node's receipt public key, PEM)")
        const pem = readFileSync(keyFile, "utf8")
        const body = /-----BEGIN PUBLIC KEY-----([^-]+)-----END PUBLIC KEY-----/.exec(pem)
        if (body === null) throw new Error(`--receipt-key ${keyFile}: not a PEM public key (BEGIN PUBLIC KEY)`)
        const dataFile = get(o.data)
        const given = get(o.hash)
        if (dataFile === undefined && given === undefined) throw new Error("--receipt needs --data (the record's data, hashed) or --hash")
        let data = dataFile === undefined ? undefined : readJson(dataFile)
        const salt = get(o.salt)
        if (salt !== undefined) {
          if (data === undefined) throw new Error("--salt needs --data (the salt is hashed with the data)")
          data = saltedCommitment(data, salt)
        }
        input = {
          receipt: new Uint8Array(readFileSync(receiptFile === "-" ? 0 : receiptFile)),
          keySpki: new Uint8Array(Buffer.from(body[1]!.replace(/\s+/g, ""), "base64")),
          hash: data === undefined ? given!.toLowerCase().replace(/^0x/, "") : recordHash(data),
          hashSource: data === undefined ? "bundle" as const : "data" as const
        }
      } catch (e) {
        return yield* couldNotCheck(e instanceof Error ? e.message : String(e))
      }
      const rpcUrl = get(o.rpc)
      let profile: FabricProfile = {}
      const profileFile = get(o.fabricProfile)
      if (profileFile !== undefined) {
        try {
          profile = readFabricProfile(profileFile)
        } catch (e) {
          return yield* couldNotCheck(`--fabric-profile ${profileFile}: ${e instanceof Error ? e.message : String(e)}`)
        }
      }
      const report = yield* verifyReceipt({
        ...input,
        rpc: rpcUrl === undefined ? undefined : rpcClient(rpcUrl, o.timeout),
        minConfirmations: o.confirmations,
        offline: o.offline,
        fabric: fabricOptions(profile)
      })
      yield* Console.log(o.json ? JSON.stringify(report, null, 2) : formatReport(report))
      process.exitCode = report.exitCode
      return
    }
    const tsr = get(o.tsr)
    if (tsr !== undefined) {
      if (get(o.salt) !== undefined) return yield* couldNotCheck("--salt does not apply to --tsr (the token's imprint is of the file's bytes)")
      const rpcUrl = get(o.rpc)
      // Loaded only here: pkijs is heavy, and a bundle-only verify must start fast.
      const { verifyTimestamp } = yield* Effect.promise(() => import("./timestampCommand.ts"))
      const report = yield* verifyTimestamp({
        tsr,
        data: get(o.data),
        ca: get(o.ca),
        bundleFile: get(o.file),
        node: get(o.node),
        apiKey: get(o.apiKey) ?? process.env.ANCHORD_API_KEY,
        readJson,
        verify: {
          rpcFor: () => rpcUrl === undefined ? undefined : rpcClient(rpcUrl, o.timeout),
          minConfirmations: o.confirmations,
          offline: o.offline
        },
        timeoutMs: o.timeout
      })
      if ("error" in report) return yield* couldNotCheck(report.error)
      yield* Console.log(o.json ? JSON.stringify(report, null, 2) : formatReport(report))
      process.exitCode = report.exitCode
      return
    }
    let input
    let data: { value: unknown } | undefined
    try {
      const file = get(o.file)
      if (file === undefined) throw new Error("give the proof bundle's file (or --tsr with a time-stamp token)")
      input = readInput(readJson(file))
      const dataFile = get(o.data)
      if (dataFile !== undefined) data = { value: readJson(dataFile) }
      const salt = get(o.salt)
      if (salt !== undefined) {
        if (data === undefined) throw new Error("--salt needs --data (the salt is hashed with the data)")
        data = { value: saltedCommitment(data.value, salt) }
      }
    } catch (e) {
      return yield* couldNotCheck(e instanceof Error ? e.message : String(e))
    }
    let profile: FabricProfile = {}
    const profileFile = get(o.fabricProfile)
    if (profileFile !== undefined) {
      try {
        profile = readFabricProfile(profileFile)
      } catch (e) {
        return yield* couldNotCheck(`--fabric-profile ${profileFile}: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
    const rpcUrl = get(o.rpc)
    const rpc = rpcUrl === undefined ? undefined : rpcClient(rpcUrl, o.timeout)
    const report = yield* verifyInput(input, {
      rpcFor: () => rpc,
      data,
      minConfirmations: o.confirmations,
      offline: o.offline,
      fabric: fabricOptions(profile)
    })
    yield* Console.log(o.json ? JSON.stringify(report, null, 2) : formatReport(report))
    process.exitCode = report.exitCode
  })).pipe(
    Command.withDescription("Verify a proof bundle (or an RFC 3161 token with --tsr, and its anchor) against the chains directly (no node, no database)")
  )
