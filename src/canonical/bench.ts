/**
 * Micro-benchmark: parseStrictJson vs JSON.parse, canonicalize and recordHash on ~1 KB records.
 * Run: npx node src/canonical/bench.ts   (takes ~5 s; BENCH_MS=300 for a quicker run)
 */
import { canonicalize, recordHash } from "./jcs.ts"
import { parseStrictJson } from "./strictJson.ts"

const RUN_MS = Number(process.env["BENCH_MS"] ?? 500)

let seed = 42
function rnd(): number {
  seed = (seed + 0x6d2b79f5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
const words = ["alpha", "beta", "gamma", "delta", "invoice", "shipment", "café", "naïve", "Zürich", "東京", "line\nbreak", "quote\"d", "tab\there",
  "plain text value"]

/** A ~1 KB record shaped like a typical business document. */
function makeRecord(i: number): unknown {
  const items = []
  const nItems = 4 + Math.floor(rnd() * 3)
  for (let k = 0; k < nItems; k++) {
    items.push({
      sku: `SKU-${Math.floor(rnd() * 1e6)}`,
      description: `${pick(words)} ${pick(words)} ${pick(words)}`,
      quantity: 1 + Math.floor(rnd() * 20),
      unitPrice: Math.round(rnd() * 100000) / 100,
      taxable: rnd() < 0.5,
      tags: [pick(words), pick(words)]
    })
  }
  return {
    id: `rec-${i}-${Math.floor(rnd() * 1e9).toString(36)}`,
    type: "invoice",
    createdAt: new Date(1_700_000_000_000 + Math.floor(rnd() * 1e10)).toISOString(),
    customer: { name: `${pick(words)} ${pick(words)}`, email: `user${i}@example.com`, vip: rnd() < 0.1, note: null },
    currency: "EUR",
    total: Math.round(rnd() * 1e7) / 100,
    items,
    metadata: { source: "api", version: 3, ratio: rnd(), trace: Math.floor(rnd() * 2 ** 40) }
  }
}

const N = 2000
const records = Array.from({ length: N }, (_, i) => makeRecord(i))
const texts = records.map((r) => JSON.stringify(r))
const totalChars = texts.reduce((a, t) => a + t.length, 0)
const totalBytes = texts.reduce((a, t) => a + Buffer.byteLength(t), 0)
const parsed = texts.map((t) => parseStrictJson(t))

let sink = 0
function bench(name: string, fn: (i: number) => number): number {
  for (let i = 0; i < N * 3; i++) sink += fn(i % N) // warm-up
  let ops = 0
  const t0 = performance.now()
  let t = t0
  while (t - t0 < RUN_MS) {
    for (let i = 0; i < N; i++) sink += fn(i)
    ops += N
    t = performance.now()
  }
  const usPerOp = ((t - t0) * 1000) / ops
  const mbPerS = (totalBytes / N) / usPerOp // bytes per µs == MB/s
  console.log(`${name.padEnd(34)} ${usPerOp.toFixed(2).padStart(7)} µs/record  ${mbPerS.toFixed(0).padStart(5)} MB/s`)
  return usPerOp
}

console.log(`node ${process.version}; ${N} records, avg ${(totalBytes / N).toFixed(0)} bytes UTF-8 (${(totalChars / N).toFixed(0)} chars)`)
const jp = bench("JSON.parse", (i) => (JSON.parse(texts[i]!) as object) ? 1 : 0)
const sp = bench("parseStrictJson", (i) => (parseStrictJson(texts[i]!) as object) ? 1 : 0)
bench("JSON.stringify (reference)", (i) => JSON.stringify(parsed[i]).length)
bench("canonicalize", (i) => canonicalize(parsed[i]).length)
bench("recordHash (canonicalize+sha256)", (i) => recordHash(parsed[i]).length)
bench("parseStrictJson+recordHash", (i) => recordHash(parseStrictJson(texts[i]!)).length)
console.log(`parseStrictJson / JSON.parse time ratio: ${(sp / jp).toFixed(2)}x`)
if (sink === 0) console.log("")
