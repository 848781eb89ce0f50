/**
 * The route table of an HttpApi definition, for answering what no endpoint can: an unknown path (404)
 * or a known path with another method (405, with Allow). Paths match with or without a trailing slash.
 */
import { HttpApi } from "effect/http-api"

export interface Route {
  /** The path template (`/v1/records/:recordId`): what metrics name a request by. */
  readonly path: string
  /** Methods served on this path; HEAD is served wherever GET is. */
  readonly methods: ReadonlySet<string>
  /** The endpoint name of each method. */
  readonly endpoints: ReadonlyMap<string, string>
}

export interface RouteTable {
  readonly find: (path: string) => Route | undefined
}

export const routeTable = (api: HttpApi.Top): RouteTable => {
  const byPath = new Map<string, { path: string; methods: Set<string>; endpoints: Map<string, string> }>()
  HttpApi.reflect(api as never, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      let route = byPath.get(endpoint.path)
      if (route === undefined) {
        route = { path: endpoint.path, methods: new Set(), endpoints: new Map() }
        byPath.set(endpoint.path, route)
      }
      route.methods.add(endpoint.method)
      route.endpoints.set(endpoint.method, endpoint.identifier)
    }
  })
  const literal = new Map<string, Route>()
  const patterns: Array<[RegExp, Route]> = []
  for (const [path, route] of byPath) {
    if (path.includes(":")) {
      const source = path.split("/").map((seg) => seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("/")
      patterns.push([new RegExp(`^${source}/?$`), route])
    } else {
      literal.set(path, route)
      literal.set(`${path}/`, route)
    }
  }
  // Literal paths first, so /v1/anchor/hash never matches a parameter route.
  return { find: (path) => literal.get(path) ?? patterns.find(([pattern]) => pattern.test(path))?.[1] }
}
