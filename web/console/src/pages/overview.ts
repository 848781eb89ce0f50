/** Overview: this month's usage against the plan with a daily chart, records by status, network health, recent failures. */
import { api, type Overview } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { badge, formatDate, formatNumber, h, svg, table } from "../dom.ts"

/** The smallest 1, 2 or 5 × 10^k at or above `n` (the chart's top, so its scale reads in round numbers). */
const niceCeiling = (n: number) => {
  const step = 10 ** Math.floor(Math.log10(Math.max(1, n)))
  return ([1, 2, 5, 10].map((m) => m * step).find((v) => v >= n))!
}

/**
 * Bars per day of the month so far (an SVG drawn with attributes only: no inline style), with a text
 * summary, and a scale: records per day on the left (0, half, top, with grid lines) and the day of the
 * month below.
 */
const dailyChart = (usage: Overview["usage"]) => {
  const [year, month] = usage.month.split("-").map(Number) as [number, number]
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate()
  const counts = new Map(usage.daily.map((d) => [Number(d.day.slice(8, 10)), d.count]))
  const top = niceCeiling(Math.max(1, ...counts.values()))
  const left = 30
  const width = 320
  const height = 90
  const plot = width - left
  const bar = plot / days
  const y = (v: number) => height - (v / top) * height
  const chart = svg("svg", { viewBox: `0 -6 ${width} ${height + 28}`, role: "img", "aria-labelledby": "chart-title", class: "chart" },
    svg("title", { id: "chart-title" },
      `Records created per day in ${usage.month}: ${usage.daily.map((d) => `${d.day.slice(8)}: ${d.count}`).join(", ") || "none yet"}`))
  // The scale: whole numbers only (a top of 1 or 5 has no whole half).
  for (const v of Number.isInteger(top / 2) ? [0, top / 2, top] : [0, top]) {
    chart.append(svg("line", { x1: left, y1: y(v).toFixed(1), x2: width, y2: y(v).toFixed(1), class: v === 0 ? "baseline" : "grid" }))
    chart.append(svg("text", { x: left - 4, y: (y(v) + 2.5).toFixed(1), class: "axis y-tick" }, formatNumber(v)))
  }
  for (let day = 1; day <= days; day++) {
    const n = counts.get(day) ?? 0
    const barHeight = n === 0 ? 0 : Math.max(2, (n / top) * height)
    const rect = svg("rect", {
      x: (left + (day - 1) * bar + 1).toFixed(1),
      y: (height - barHeight).toFixed(1),
      width: Math.max(1, bar - 2).toFixed(1),
      height: barHeight.toFixed(1),
      class: "bar"
    }, svg("title", {}, `${usage.month}-${String(day).padStart(2, "0")}: ${n}`))
    chart.append(rect)
    if (day === 1 || day % 7 === 0) chart.append(svg("text", { x: (left + (day - 0.5) * bar).toFixed(1), y: height + 10, class: "axis x-tick" }, String(day)))
  }
  chart.append(svg("text", { x: left + plot / 2, y: height + 20, class: "axis x-label" }, `day of ${usage.month} (records per day on the left)`))
  return chart
}

export const overviewPage = async (ctx: PageContext): Promise<Node> => {
  const o = await api.overview(ctx.accountId, ctx.environment)
  const u = o.usage
  const share = u.quota === null ? null : Math.min(100, (u.used / u.quota) * 100)
  const usageText = u.quota === null
    ? `${formatNumber(u.used)} records this month (unlimited plan)`
    : `${formatNumber(u.used)} of ${formatNumber(u.quota)} records this month (${share!.toFixed(share! < 10 ? 1 : 0)}%)`
  const statuses = ["QUEUED", "BATCHING", "ANCHORED", "FAILED", "DELETED"] as const
  return h("section", { class: "overview" }, h("h1", {}, `Overview — ${o.account.name}`),
    h("p", { class: "meta" }, badge(o.account.plan, "plan"), " ", badge(o.account.status),
      ` · ${ctx.environment} environment · ${formatNumber(u.perSecond)} requests/s`),
    h("div", { class: "grid" },
      h("section", { class: "card", "aria-labelledby": "usage-h" }, h("h2", { id: "usage-h" }, "Usage"), h("p", { class: "big" }, usageText),
        u.quota === null ? null : h("progress", { max: u.quota, value: u.used, "aria-label": "Share of the monthly quota used" }),
        h("p", { class: "hint" }, `Resets ${formatDate(u.resetsAt)}. Counts records of both environments.`), dailyChart(u)),
      h("section", { class: "card", "aria-labelledby": "status-h" }, h("h2", { id: "status-h" }, `Records (${ctx.environment})`),
        h("dl", { class: "counts" }, ...statuses.flatMap((s) => [
          h("dt", {}, h("a", { href: accountHash(ctx.accountId, "records", { status: s }) }, s)),
          h("dd", {}, formatNumber(o.records[s] ?? 0))
        ]))), h("section", { class: "card", "aria-labelledby": "net-h" }, h("h2", { id: "net-h" }, "Networks"), o.networks.length === 0
        ? h("p", {}, `No ${ctx.environment} network is configured on this node.`)
        : h("ul", { class: "plain" },
          ...o.networks.map((n) =>
            h("li", {}, h("strong", {}, n.networkId), ` (${n.chainType}) `, badge(n.status), n.head !== null ? ` head ${n.head}` : "",
              n.lastError !== null ? h("span", { class: "hint block" }, `Last error: ${n.lastError}`) : null)
          )))),
    h("section", { class: "card", "aria-labelledby": "fail-h" }, h("h2", { id: "fail-h" }, "Recent failures"),
      o.recentFailures.records.length === 0 && o.recentFailures.deliveries.length === 0
        ? h("p", {}, "None: every record is anchored or on its way, and every webhook delivery succeeded or is being retried.")
        : h("div", {}, o.recentFailures.records.length === 0 ?
          null :
          table("Records that failed to anchor", ["Record", "Network", "Failed"], o.recentFailures.records.map((
            r
          ) => [h("a", { href: accountHash(ctx.accountId, `records/${r.recordId}`) }, h("code", {}, r.recordId)), r.networkId, formatDate(r.updatedAt)])),
          o.recentFailures.deliveries.length === 0 ?
            null :
            table("Webhook deliveries that failed", ["Delivery", "Event", "URL", "Last status"], o.recentFailures.deliveries.map((d) => [
              h("a", { href: accountHash(ctx.accountId, "deliveries", { status: "FAILED" }) }, h("code", {}, d.id)),
              d.event,
              h("code", {}, d.url),
              d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : d.lastError ?? "—"
            ])))))
}
