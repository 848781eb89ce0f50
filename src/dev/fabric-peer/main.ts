/**
 * Runs the Fabric gateway dev peer until SIGINT/SIGTERM.
 *
 *   node src/fabric/devpeer/main.ts [--host 127.0.0.1] [--port 7051] [--channel anchord]
 *     [--chaincode anchord] [--msp-id AnchordDevMSP] [--data-dir .anchord/fabric-devpeer]
 *     [--block-interval-ms 50] [--max-tx-per-block 100] [--tls-cert file --tls-key file] [--quiet]
 *
 * Each option can also come from the environment: FABRIC_DEVPEER_HOST, FABRIC_DEVPEER_PORT,
 * FABRIC_DEVPEER_CHANNEL, FABRIC_DEVPEER_CHAINCODE, FABRIC_DEVPEER_MSP_ID, FABRIC_DEVPEER_DATA_DIR,
 * FABRIC_DEVPEER_BLOCK_INTERVAL_MS, FABRIC_DEVPEER_MAX_TX_PER_BLOCK, FABRIC_DEVPEER_TLS_CERT,
 * FABRIC_DEVPEER_TLS_KEY. Prints the connection settings (and identity file paths) as JSON.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { parseArgs } from "node:util"
import { startDevPeer } from "./index.ts"

const { values } = parseArgs({
  options: {
    host: { type: "string" },
    port: { type: "string" },
    channel: { type: "string" },
    chaincode: { type: "string" },
    "msp-id": { type: "string" },
    "data-dir": { type: "string" },
    "block-interval-ms": { type: "string" },
    "max-tx-per-block": { type: "string" },
    "tls-cert": { type: "string" },
    "tls-key": { type: "string" },
    quiet: { type: "boolean" }
  }
})

const env = (name: string): string | undefined => process.env[`FABRIC_DEVPEER_${name}`] || undefined
const option = (name: keyof typeof values, envName: string): string | undefined => (values[name] as string | undefined) ?? env(envName)
const integer = (text: string | undefined, name: string): number | undefined => {
  if (text === undefined) return undefined
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(text)}`)
  return n
}

const dataDir = option("data-dir", "DATA_DIR") ?? resolve(".anchord", "fabric-devpeer")
const tlsCert = option("tls-cert", "TLS_CERT")
const tlsKey = option("tls-key", "TLS_KEY")
if ((tlsCert === undefined) !== (tlsKey === undefined)) throw new Error("--tls-cert and --tls-key go together")
const host = option("host", "HOST")
const port = integer(option("port", "PORT"), "port")
const channel = option("channel", "CHANNEL")
const chaincode = option("chaincode", "CHAINCODE")
const mspId = option("msp-id", "MSP_ID")
const blockIntervalMs = integer(option("block-interval-ms", "BLOCK_INTERVAL_MS"), "block-interval-ms")
const maxTxPerBlock = integer(option("max-tx-per-block", "MAX_TX_PER_BLOCK"), "max-tx-per-block")

const devPeer = await startDevPeer({
  dataDir: resolve(dataDir),
  ...(host === undefined ? {} : { host }),
  ...(port === undefined ? {} : { port }),
  ...(channel === undefined ? {} : { channel }),
  ...(chaincode === undefined ? {} : { chaincode }),
  ...(mspId === undefined ? {} : { mspId }),
  ...(blockIntervalMs === undefined ? {} : { blockIntervalMs }),
  ...(maxTxPerBlock === undefined ? {} : { maxTxPerBlock }),
  ...(tlsCert && tlsKey ? { tls: { certPem: readFileSync(tlsCert, "utf8"), keyPem: readFileSync(tlsKey, "utf8") } } : {}),
  ...(values.quiet ? {} : { log: (message: string) => console.error(`[fabric-devpeer] ${message}`) })
})

console.log(
  JSON.stringify(
    {
      address: devPeer.address,
      tls: tlsCert !== undefined,
      channel: devPeer.channel,
      chaincode: devPeer.chaincode,
      mspId: devPeer.mspId,
      certPath: devPeer.clientIdentity.certPath,
      keyPath: devPeer.clientIdentity.keyPath,
      blockHeight: devPeer.blockHeight()
    },
    null,
    2
  )
)

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void devPeer.close().then(() => process.exit(0))
  })
}
