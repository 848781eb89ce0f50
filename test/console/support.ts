/**
 * Console test kit: a whole node in process anchoring on a real Anvil chain (its public RPC listed for
 * the verify page through a TCP proxy the test can take down), on a Clock the test can move forward
 * (session expiry without sleeping), with console users made directly in the database, and helpers to
 * drive the console's pages in Chromium.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Clock, Duration, Effect, Layer } from "effect"
import type { Page } from "playwright-core"
import { Accounts } from "../../src/auth/Accounts.ts"
import { hashPassword } from "../../src/console/passwords.ts"
import { ConsoleUsers, type Role } from "../../src/console/Users.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { deploy, network, rpcProxy } from "../evm/support.ts"
import { ROOT_DIR } from "../support/logs.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { WAIT_MS, type BrowserKit } from "../support/browser.ts"

/** The real clock plus an offset the test can move forward (the node reads all its time through it). */
export const shiftableClock = () => {
  let offset = 0
  const now = () => Date.now() + offset
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: now,
    currentTimeMillis: Effect.sync(now),
    currentTimeNanosUnsafe: () => BigInt(now()) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(now()) * 1_000_000n),
    monotonicTimeNanosUnsafe: () => process.hrtime.bigint(),
    monotonicTimeNanos: Effect.sync(() => process.hrtime.bigint()),
    sleep: (d) =>
      Effect.callback<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(d))
        return Effect.sync(() => clearTimeout(timer))
      })
  }
  return { layer: Layer.succeed(Clock.Clock, clock), shift: (ms: number) => void (offset += ms), now }
}

export const EXPLORER = "https://explorer.example"

export interface ConsoleNode {
  readonly node: TestNode
  readonly anvil: Anvil
  /** The RPC endpoint the verify page is given (a proxy to Anvil the test can take down). */
  readonly publicRpc: Awaited<ReturnType<typeof rpcProxy>>
  readonly chainId: number
  readonly networkId: string
  readonly clock: ReturnType<typeof shiftableClock>
  readonly user: (email: string, password: string, target: { operator: true } | { accountId: string; role: Role }) => Promise<void>
  readonly stop: () => Promise<void>
}

export const startConsoleNode = async (): Promise<ConsoleNode> => {
  const anvil = await startAnvil()
  const privateKey = await anvil.fundedKey()
  const d = await deploy(anvil.rpcUrl, privateKey)
  const publicRpc = await rpcProxy({ host: "127.0.0.1", port: anvil.port })
  const networkId = "console-evm"
  const clock = shiftableClock()
  const layer = makeNodeLayer(EvmNetworks.layerWith([network({
    networkId,
    rpcUrl: anvil.rpcUrl,
    publicRpcUrl: publicRpc.url,
    explorerUrl: EXPLORER,
    chainId: d.chainId,
    contractAddress: d.address,
    confirmations: 1,
    environment: "test",
    batchMaxSize: 50,
    batchWindowMs: 200,
    pollIntervalMs: 100
  }, privateKey)])).pipe(Layer.provide(clock.layer))
  const node = await startNode({ layer })
  return {
    node,
    anvil,
    publicRpc,
    chainId: d.chainId,
    networkId,
    clock,
    user: async (email, password, target) => {
      const passwordHash = await hashPassword(password)
      await node.runtime.runPromise(
        Effect.flatMap(ConsoleUsers,
          (users) => users.create("operator" in target ? { email, passwordHash, operator: true } : { email, passwordHash, operator: false, ...target }))
      )
    },
    stop: async () => {
      await node.stop()
      await publicRpc.close()
      await anvil.stop()
    }
  }
}

/** An account's id by name (operators' tests create accounts through the page). */
export const accountNamed = (node: TestNode, name: string) =>
  node.runtime.runPromise(Effect.map(Effect.flatMap(Accounts, (a) => a.list), (list) => list.find((a) => a.name === name)))

export const signIn = async (page: Page, baseUrl: string, email: string, password: string) => {
  if (!page.url().includes("#/sign-in")) await page.goto(`${baseUrl}/console/#/sign-in`)
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in" }).click()
}

/** Waits until the console shows the page with this heading (level 1). */
// Exact for a text: "Records" must not match "Overview — Acme Records" while the records page is on its way.
export const heading = (page: Page, text: string | RegExp) =>
  page.getByRole("heading", { level: 1, name: text, exact: typeof text === "string" }).waitFor({ timeout: WAIT_MS })

/** The console's pages' screenshots, also written to docs/console/ when UPDATE_SCREENSHOTS=1 (README shows them). */
export const docsScreenshot = async (kit: BrowserKit, page: Page, name: string) => {
  const file = await kit.screenshot(page, name)
  if (process.env.UPDATE_SCREENSHOTS === "1") {
    const target = Path.join(ROOT_DIR, "docs/console", `${name}.png`)
    Fs.mkdirSync(Path.dirname(target), { recursive: true })
    Fs.copyFileSync(file, target)
  }
}

/** Every form control without an accessible label (a <label for>, aria-label or aria-labelledby). */
export const unlabelledControls = (page: Page) =>
  page.evaluate(() => {
    const g = globalThis as any
    return [...g.document.querySelectorAll("input, select, textarea")]
      .filter((e: any) => e.type !== "hidden" && e.labels?.length === 0 && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
      .map((e: any) => e.outerHTML.slice(0, 120))
  }) as Promise<Array<string>>

/** The page's width in CSS pixels (wider than the viewport means horizontal scrolling). */
export const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number)
