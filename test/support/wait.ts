export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `f` until it returns a truthy value (or throws after `timeoutMs`, naming what it waited for). */
export const waitFor = async <A>(what: string, f: () => Promise<A | undefined | false | null>, timeoutMs = 20_000, everyMs = 100): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await f()
      if (v) return v as A
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`)
    await sleep(everyMs)
  }
}
