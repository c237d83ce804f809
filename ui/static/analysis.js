// Canary against baseline, per analysis step: for each step's windows, the error rate and
// the p99 of both sides as bars, the verdict under each window, and every figure in a table.

import { h, replace, clock, pct, ms } from "./dom.js";
import { barChart } from "./charts.js";

const $ = (id) => document.getElementById(id);
const MARKS = { pass: "✓", fail: "✗", inconclusive: "?" };

function stepTitle(r, step) {
  if (step === null || step === undefined) return "Background analysis during the walk";
  const st = r.strategy && r.strategy.canary && r.strategy.canary.steps ? r.strategy.canary.steps[step] : null;
  const what = [];
  if (st && st.weight !== undefined && st.weight !== null) what.push(`weight ${st.weight} %`);
  if (st && st.instances) what.push(`${st.instances} ${st.instances === 1 ? "instance" : "instances"}`);
  return `Step ${step + 1} of ${r.steps_total}` + (what.length ? ` (${what.join(", ")})` : "");
}

// windowLabel is a window's short name under its bars: its number, or the whole step.
function windowLabel(v, i) {
  const tail = String(v.window).split("/").pop();
  return /^\d+$/.test(tail) ? `#${tail}` : tail || `#${i + 1}`;
}

function side(x) {
  return `${x.requests} requests, ${pct(x.error_rate)} 5xx, p50 ${ms(x.p50_ms)}, p99 ${ms(x.p99_ms)}` +
    (x.crashes ? `, ${x.crashes} ${x.crashes === 1 ? "crash" : "crashes"}` : "");
}

function stepBlock(r, step, verdicts) {
  const groups = (key) => verdicts.map((v, i) => ({
    label: `${windowLabel(v, i)} ${MARKS[v.verdict] || ""}`, mark: v.verdict,
    values: [v.canary[key], v.baseline[key]],
  }));
  const names = [`canary (${r.to_definition_id})`, "baseline"];
  const words = (key, fmt) => verdicts.map((v, i) =>
    `window ${windowLabel(v, i)} (${v.verdict}): canary ${fmt(v.canary[key])}, baseline ${fmt(v.baseline[key])}`).join("; ") + ".";
  const id = step === null || step === undefined ? "background" : `step-${step}`;
  return h("section", { class: "analysis-step", id: `analysis-${id}`, "aria-label": stepTitle(r, step) },
    h("h4", {}, stepTitle(r, step)),
    h("div", { class: "charts" },
      barChart({ title: "Error rate (5xx), canary against baseline", desc: words("error_rate", (x) => pct(x)), names,
        groups: groups("error_rate").map((g) => ({ ...g, values: g.values.map((x) => 100 * x) })), unit: " %" }),
      barChart({ title: "p99 latency, canary against baseline", desc: words("p99_ms", ms), names,
        groups: groups("p99_ms"), unit: " ms" })),
    h("table", { class: "verdicts" },
      h("caption", {}, "Each window's verdict and figures"),
      h("thead", {}, h("tr", {}, ["Window", "Verdict", "Canary", "Baseline", "Reason"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, verdicts.map((v, i) => h("tr", { class: v.verdict, "data-verdict": v.verdict },
        h("th", { scope: "row" }, `${windowLabel(v, i)}, ${clock(v.from)}–${clock(v.at)}`),
        h("td", {}, h("span", { class: `verdict ${v.verdict}` }, `${MARKS[v.verdict] || ""} ${v.verdict}`)),
        h("td", {}, side(v.canary)),
        h("td", {}, side(v.baseline)),
        h("td", {}, v.reason + (v.provider ? ` (${v.provider})` : "")))))));
}

export function analysisSection(r) {
  const el = $("analysis");
  const verdicts = r.analysis || [];
  if (verdicts.length === 0) {
    const steps = (r.strategy && r.strategy.canary && r.strategy.canary.steps) || [];
    const planned = steps.some((st) => st.analysis) || (r.strategy && r.strategy.analysis && r.strategy.analysis.background);
    replace(el, h("p", {}, planned ? "No verdict yet: the first comes at the end of the first analysis window."
      : "This rollout's strategy asks for no analysis."));
    return;
  }
  const byStep = new Map();
  for (const v of verdicts) {
    const k = v.step === null || v.step === undefined ? "background" : v.step;
    if (!byStep.has(k)) byStep.set(k, []);
    byStep.get(k).push(v);
  }
  replace(el, [...byStep].map(([k, vs]) => stepBlock(r, k === "background" ? null : k, vs)));
}
