/**
 * Operations per second of a synchronous function, by wall time and per CPU-second of this process (the
 * machine may be shared: the CPU figure is the steadier one). `f` returns false to say an operation failed,
 * which stops the bench with `label`.
 */
export const opsPerSecond = (label: string, seconds: number, f: (i: number) => unknown, warmup = 1000) => {
  for (let i = 0; i < warmup; i++) if (f(i) === false) throw new Error(`${label}: an operation failed`)
  let n = 0
  const cpu0 = process.cpuUsage()
  const start = process.hrtime.bigint()
  const until = start + BigInt(Math.round(seconds * 1e9))
  let now = start
  while (now < until) {
    for (let k = 0; k < 64; k++) if (f(n++) === false) throw new Error(`${label}: an operation failed`)
    now = process.hrtime.bigint()
  }
  const cpu = process.cpuUsage(cpu0)
  return { wall: n / (Number(now - start) / 1e9), cpu: n / ((cpu.user + cpu.system) / 1e6) }
}
