// The traffic split over time: the routers' cumulative counts, sampled every two seconds,
// turned into requests per second and share of requests by definition between consecutive
// samples, charted beside the weight the routers acknowledged, with the figures as a table.

import { h, replace, clock, pct } from "./dom.js";
import { lineChart } from "./charts.js";

const $ = (id) => document.getElementById(id);
const TABLE_ROWS = 30;

// intervals turns samples into rates. Two samples compare only when the same routers, in
// the same runs, counted both: a router that started again counts from zero, and one no
// longer live drops out of the sums. Such an interval is a gap.
export function intervals(samples) {
  const out = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    const dt = (b.at - a.at) / 1e9;
    if (!(dt > 0)) continue;
    if (a.routers !== b.routers || !b.routers) {
      out.push({ at: b.at, gap: true, defs: {} });
      continue;
    }
    const defs = {};
    let total = 0, bad = false;
    for (const [d, c] of Object.entries(b.defs)) {
      const p = a.defs[d] || { requests: 0, errors: 0 };
      const n = c.requests - p.requests, e = c.errors - p.errors;
      if (n < 0 || e < 0) bad = true;
      defs[d] = { rate: n / dt, n, errors: e };
      total += n;
    }
    if (bad) {
      out.push({ at: b.at, gap: true, defs: {} });
      continue;
    }
    for (const d of Object.values(defs)) d.share = total > 0 ? (100 * d.n) / total : null;
    out.push({ at: b.at, gap: false, total: total / dt, defs });
  }
  return out;
}

// order puts the new definition first (the canary), then the old, then any other.
function order(r, ivs) {
  const defs = [r.to_definition_id, r.from_definition_id];
  for (const iv of ivs) for (const d of Object.keys(iv.defs)) if (!defs.includes(d)) defs.push(d);
  return defs;
}

export function trafficSection(r, samples, acked) {
  const ivs = intervals(samples);
  const counted = ivs.filter((iv) => !iv.gap && iv.total > 0);
  const note = $("traffic-note");
  const chart = $("traffic-chart");
  if (counted.length === 0) {
    note.textContent = samples.length < 2
      ? "Measured at the routers: the page reads what every live router counted for this LRP every two seconds; the first figures come with the second sample."
      : "No requests through the routers to this LRP since the page opened.";
    replace(chart);
    replace($("traffic-table").tHead);
    replace($("traffic-table").tBodies[0]);
    return;
  }
  note.textContent = `Measured at the routers, every two seconds since the page opened: ${counted.length} ${counted.length === 1 ? "interval" : "intervals"} with traffic. ` +
    "The dotted line is the new definition's weight as every router acknowledged it.";
  const defs = order(r, ivs);
  const xMin = ivs[0].at - 2e9, xMax = ivs[ivs.length - 1].at;
  const xFormat = (x) => clock(x);
  const series = (key) => defs.map((d) => ({
    name: d === r.to_definition_id ? `${d} (new)` : d === r.from_definition_id ? `${d} (old)` : d,
    points: ivs.map((iv) => [iv.at, iv.gap || !iv.defs[d] ? (iv.gap ? null : 0) : iv.defs[d][key]]),
  }));
  const last = counted[counted.length - 1];
  const latest = defs.filter((d) => last.defs[d]).map((d) =>
    `${d} ${last.defs[d].share.toFixed(1)} % (${last.defs[d].rate.toFixed(1)} requests/s, ${pct(last.defs[d].n ? last.defs[d].errors / last.defs[d].n : 0, 1)} 5xx)`).join(", ");
  const desc = `From ${clock(xMin)} to ${clock(xMax)}. Latest, at ${clock(last.at)}: ${latest}.`;
  const weight = acked.filter(([at]) => at <= xMax).map(([at, w]) => [Math.max(at, xMin), w && w[r.to_definition_id] !== undefined ? w[r.to_definition_id] : null]);
  replace(chart,
    lineChart({ title: "Share of requests by definition (%)", desc, series: series("share"), xMin, xMax, xFormat,
      unit: " %", yMax: 100, target: { name: `${r.to_definition_id} weight acknowledged`, points: weight } }),
    lineChart({ title: "Requests per second by definition", desc, series: series("rate"), xMin, xMax, xFormat,
      unit: "" }));
  const table = $("traffic-table");
  replace(table.tHead, h("tr", {}, h("th", { scope: "col" }, "Time"),
    defs.map((d) => h("th", { scope: "col" }, `${d}: requests/s, share, 5xx`))));
  replace(table.tBodies[0], ivs.slice(-TABLE_ROWS).reverse().map((iv) =>
    h("tr", {}, h("th", { scope: "row" }, clock(iv.at)),
      defs.map((d) => h("td", {}, iv.gap ? "no comparable counts (a router joined, left or restarted)"
        : !iv.defs[d] ? "—"
        : `${iv.defs[d].rate.toFixed(1)}, ${iv.defs[d].share === null ? "—" : iv.defs[d].share.toFixed(1) + " %"}, ${iv.defs[d].errors}`)))));
}
