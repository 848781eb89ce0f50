/**
 * Seeded fuzz of the TSA's request parser (docs/timestamping.md: whatever the bytes, a malformed request is
 * an RFC 3161 refusal with HTTP 200, never a 5xx). `openssl ts -query` requests (every hash, with and
 * without nonce, certReq, policy) are mutated — bits flipped, bytes set, lengths changed, cut, spliced,
 * tags swapped for the string and time types asn1js decodes eagerly, hostile primitives inserted — then
 * parsed in-process many times over, and a share of them POSTed to a real node at both paths.
 *   npx vitest run test/tsa/fuzz.test.ts      (FUZZ_SEED=n for another seed)
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseRequest } from "../../src/tsa/request.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { type DevTsa, useDevTsa } from "./support.ts"

const SEED = Number(process.env.FUZZ_SEED ?? 0x75a5eed)
const PARSED = 20_000
const POSTED = 1_200
const CONCURRENCY = 6
const POLICY = "1.3.6.1.4.1.57264.2.1"

/** Mulberry32: the same requests on every run of a seed. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-tsa-fuzz-"))

/** Real queries, as clients send them. */
const openSslQueries = (): Array<Uint8Array> => {
  Fs.writeFileSync(Path.join(dir, "data.txt"), "fuzzed document\n")
  const out: Array<Uint8Array> = []
  for (const hash of ["sha256", "sha384", "sha512", "sha1"]) {
    for (const extra of [[], ["-cert"], ["-no_nonce"], ["-cert", "-tspolicy", POLICY], ["-no_nonce", "-tspolicy", "1.2.3.4"]]) {
      const file = Path.join(dir, `q-${hash}-${out.length}.tsq`)
      const r = ChildProcess.spawnSync("openssl", ["ts", "-query", "-data", Path.join(dir, "data.txt"), `-${hash}`, ...extra, "-out", file])
      if (r.status !== 0) throw new Error(`openssl ts -query: ${r.stderr}`)
      out.push(new Uint8Array(Fs.readFileSync(file)))
    }
  }
  return out
}

/** The string and time types whose decoding in asn1js throws on a length their type cannot hold. */
const EAGER_TAGS = [0x17, 0x18, 0x1c, 0x1e, 0x0c, 0x13, 0x16, 0x1a]
const ANY_TAGS = [...EAGER_TAGS, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0a, 0x30, 0x31, 0xa0, 0xa1, 0x80, 0x1f, 0x3f, 0xff, 0x00]

const mutator = (seed: number) => {
  const r = rng(seed)
  const int = (n: number) => Math.floor(r() * n)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[int(xs.length)]!
  const bytes = (n: number) => Array.from({ length: n }, () => int(256))
  const lengthBytes = () =>
    pick([[int(128)], [0x80], [0x81, int(256)], [0x82, int(256), int(256)], [0x84, 0xff, 0xff, 0xff, 0xff], [0x89, ...bytes(9)], [0xff]])
  const hostilePrimitive = () => {
    const length = pick([0, 1, 2, 3, 5, 7, 13, 200])
    return [pick(ANY_TAGS), ...(r() < 0.7 ? [length] : lengthBytes()), ...bytes(r() < 0.8 ? length : int(8))]
  }
  const once = (b: Array<number>): Array<number> => {
    const at = int(b.length)
    switch (int(10)) {
      case 0: // flip a bit
        b[at] = b[at]! ^ (1 << int(8))
        return b
      case 1: // set a byte
        b[at] = int(256)
        return b
      case 2: // cut
        return b.slice(0, at)
      case 3: // drop a range
        return [...b.slice(0, at), ...b.slice(at + 1 + int(8))]
      case 4: // a tag swapped for a string or time type, its length kept
        for (let i = 0; i < 8; i++) {
          const j = int(b.length)
          if ([0x02, 0x04, 0x06, 0x05, 0x01, 0x30].includes(b[j]!)) {
            b[j] = pick(EAGER_TAGS)
            return b
          }
        }
        b[at] = pick(EAGER_TAGS)
        return b
      case 5: // a length changed
        return [...b.slice(0, at), ...lengthBytes(), ...b.slice(at + 1)]
      case 6: // a hostile primitive inserted
        return [...b.slice(0, at), ...hostilePrimitive(), ...b.slice(at)]
      case 7: // a range repeated
        return [...b.slice(0, at), ...b.slice(at, at + 1 + int(16)), ...b.slice(at)]
      case 8: // wrapped in another constructed type
        return [pick([0x30, 0x31, 0xa0, 0x24, 0x2c]), ...(b.length < 128 ? [b.length] : [0x82, b.length >> 8, b.length & 0xff]), ...b]
      default: // random bytes appended
        return [...b, ...bytes(1 + int(6))]
    }
  }
  return (base: Uint8Array): Uint8Array => {
    let b = [...base]
    const rounds = 1 + int(r() < 0.8 ? 2 : 6)
    for (let i = 0; i < rounds && b.length > 0; i++) b = once(b)
    return new Uint8Array(b)
  }
}

/** The three bodies of the report, and their neighbours: a string or time primitive with a bad length. */
const REPORTED = [[0x1c, 0x01, 0x41], [0x18, 0x01, 0x41], [0x1e, 0x01, 0x41], [0x1c, 0x02, 0x41, 0x42], [0x1e, 0x03, 0, 0x41, 0x42], [0x30, 0x03, 0x1c, 0x01,
  0x41]]
  .map((b) => new Uint8Array(b))

/** PKIStatus and PKIFailureInfo bit of a TimeStampResp. */
const statusOf = (der: Uint8Array) => {
  const response = new pkijs.TimeStampResp({ schema: asn1js.fromBER(der).result })
  const failInfo = response.status.failInfo
  return { status: response.status.status, badDataFormat: failInfo !== undefined && failInfo.valueBlock.valueHexView[0]! === 0x04 }
}

describe("TSA request parser fuzz", () => {
  let node: TestNode
  let key: string
  let tsa: DevTsa | undefined
  let bases: Array<Uint8Array>

  beforeAll(async () => {
    bases = openSslQueries()
    tsa = await useDevTsa(dir)
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  }, 120_000)
  afterAll(async () => {
    await node?.stop()
    tsa?.restore()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("the reported bodies (bad-length UniversalString, GeneralizedTime, BMPString) are badDataFormat refusals with HTTP 200 at both paths", async () => {
    for (const body of REPORTED) {
      expect(parseRequest(body, POLICY)).toMatchObject({ _tag: "Refused", failure: "badDataFormat" })
      for (const path of ["/tsa", "/v1/timestamp"]) {
        const r = await fetch(`${node.baseUrl}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/timestamp-query" },
          body
        })
        expect(r.status).toBe(200)
        expect(r.headers.get("content-type")).toBe("application/timestamp-reply")
        expect(statusOf(new Uint8Array(await r.arrayBuffer()))).toEqual({ status: 2, badDataFormat: true })
      }
    }
  })

  it(`${PARSED} mutated openssl queries: the parser never throws; each is a request or a refusal`, () => {
    const mutate = mutator(SEED)
    const r = rng(SEED ^ 0x1234)
    const outcomes = new Map<string, number>()
    const thrown: Array<string> = []
    for (let i = 0; i < PARSED; i++) {
      const body = mutate(bases[Math.floor(r() * bases.length)]!)
      try {
        const parsed = parseRequest(body, POLICY)
        const outcome = parsed._tag === "Stamp" ? "stamp" : parsed.failure
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      } catch (e) {
        thrown.push(`${Buffer.from(body).toString("hex")}: ${(e as Error).message}`)
      }
    }
    console.log(`tsa fuzz seed ${SEED}: ${PARSED} parsed: ${[...outcomes].map(([k, n]) => `${k} ${n}`).join(", ")}`)
    expect(thrown.slice(0, 10)).toEqual([])
    // The mutations reach past the first byte: some are still requests, most are refusals of several kinds.
    expect(outcomes.get("stamp") ?? 0).toBeGreaterThan(0)
    expect(outcomes.get("badDataFormat") ?? 0).toBeGreaterThan(PARSED / 4)
  })

  it(`${POSTED} mutated queries over HTTP: every answer is below 500 (a token, a refusal, or a documented error body)`, async () => {
    const mutate = mutator(SEED + 1)
    const r = rng(SEED ^ 0x4321)
    const bodies = Array.from({ length: POSTED }, () => mutate(bases[Math.floor(r() * bases.length)]!))
    const byStatus = new Map<string, number>()
    const problems: Array<string> = []
    let next = 0
    const worker = async () => {
      while (next < bodies.length) {
        const i = next++
        const body = bodies[i]!
        const res = await fetch(`${node.baseUrl}${i % 2 === 0 ? "/tsa" : "/v1/timestamp"}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/timestamp-query" },
          body
        })
        const bytes = new Uint8Array(await res.arrayBuffer())
        let outcome = String(res.status)
        if (res.status === 200) {
          const { status } = statusOf(bytes)
          outcome = status <= 1 ? "200 granted" : "200 refused"
        } else if (res.status >= 500) {
          problems.push(`${res.status} for ${Buffer.from(body).toString("hex")}: ${new TextDecoder().decode(bytes).slice(0, 200)}`)
        } else {
          expect(JSON.parse(new TextDecoder().decode(bytes))).toMatchObject({ success: false })
        }
        byStatus.set(outcome, (byStatus.get(outcome) ?? 0) + 1)
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    console.log(`tsa fuzz seed ${SEED}: ${POSTED} posted: ${[...byStatus].map(([k, n]) => `${k} ${n}`).join(", ")}`)
    expect(problems.slice(0, 10)).toEqual([])
    expect(byStatus.get("200 refused") ?? 0).toBeGreaterThan(POSTED / 4)
  }, 300_000)
})
