// The slice of autocannon's API that the benchmarks use (the package ships no types).
declare module "autocannon" {
  namespace autocannon {
    interface Histogram {
      readonly average: number
      readonly mean: number
      readonly p50: number
      readonly p90: number
      readonly p99: number
      readonly max: number
    }
    interface Result {
      readonly "2xx": number
      readonly non2xx: number
      readonly errors: number
      readonly timeouts: number
      readonly latency: Histogram
      readonly requests: Histogram & { readonly total: number }
    }
    interface Options {
      readonly url: string
      readonly method?: string
      readonly headers?: Record<string, string>
      readonly body?: string
      readonly connections?: number
      readonly duration?: number
      readonly amount?: number
    }
  }
  function autocannon(options: autocannon.Options, callback: (error: Error | null, result: autocannon.Result) => void): unknown
  export default autocannon
}
