// The package ships no types: what test/metrics/metrics.test.ts reads of its result.
declare module "parse-prometheus-text-format" {
  const parse: (text: string) => Array<{
    name: string
    help: string
    type: string
    metrics: Array<{ value?: string; labels?: Record<string, string>; count?: string; sum?: string; buckets?: Record<string, string> }>
  }>
  export default parse
}
