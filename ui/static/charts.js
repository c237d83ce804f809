// SVG charts: a line chart (values over time) and a grouped bar chart (canary against
// baseline per window). Each is a <figure> whose SVG is an image with a title and a
// description in words; the page puts the figures in a table beside it, for those who
// cannot see the chart. Series differ by colour and by dash or hatch, not colour alone.

import { h, s } from "./dom.js";

const W = 640, H = 220;
const M = { left: 56, right: 16, top: 12, bottom: 30 };
const PLOT_W = W - M.left - M.right, PLOT_H = H - M.top - M.bottom;

// Series styles, by position: the first is the new definition or the canary.
export const STYLES = [
  { cls: "s0", dash: null },
  { cls: "s1", dash: "7 4" },
  { cls: "s2", dash: "2 3" },
  { cls: "s3", dash: "10 3 2 3" },
];

let nextID = 0;

// scale picks the y axis: four ticks of a round step (1, 2, 2.5 or 5 times a power of
// ten) whose top holds v, and how many decimals the step needs.
function scale(v) {
  const need = v > 0 ? v / 4 : 0.25;
  const p = Math.pow(10, Math.floor(Math.log10(need)));
  let step = 10 * p;
  for (const m of [1, 2, 2.5, 5]) if (need <= m * p * (1 + 1e-9)) { step = m * p; break; }
  let digits = 0;
  while (digits < 4 && Math.abs(Math.round(step * 10 ** digits) - step * 10 ** digits) > 1e-6) digits++;
  return { top: 4 * step, digits };
}

function yAxis(sc, unit) {
  const g = s("g", { class: "axis", "aria-hidden": "true" });
  for (let i = 0; i <= 4; i++) {
    const v = (sc.top * i) / 4, y = M.top + PLOT_H - (PLOT_H * i) / 4;
    g.append(s("line", { x1: M.left, x2: W - M.right, y1: y, y2: y, class: i ? "grid" : "base" }));
    g.append(s("text", { x: M.left - 6, y: y + 4, "text-anchor": "end" }, v.toFixed(sc.digits) + unit));
  }
  return g;
}

// frame is the figure around an SVG: its accessible name and description, and a legend of
// {label, cls}.
function frame(title, desc, svgChildren, legend) {
  const id = "chart-" + nextID++;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": `${id}-t ${id}-d`, class: "chart" },
    s("title", { id: `${id}-t` }, title), s("desc", { id: `${id}-d` }, desc), svgChildren);
  return h("figure", { class: "chart-figure" }, svg,
    h("figcaption", {}, h("span", { class: "chart-title" }, title),
      h("ul", { class: "legend" }, legend.map((l) =>
        h("li", {}, h("span", { class: `swatch ${l.cls}`, "aria-hidden": "true" }), l.label)))));
}

// lineChart draws series of [x, y] points (y null: a gap) over [xMin, xMax]. xFormat labels
// the x axis, unit follows the y axis's numbers; yMax, when given, fixes the top (a share:
// 100); target, when given, is a dotted step line beside them.
export function lineChart({ title, desc, series, xMin, xMax, xFormat, unit, yMax, target }) {
  let v = 0;
  for (const sr of series) for (const [, y] of sr.points) if (y !== null) v = Math.max(v, y);
  const sc = scale(yMax !== undefined ? yMax : v);
  const top = sc.top;
  const span = Math.max(xMax - xMin, 1);
  const X = (x) => M.left + (PLOT_W * (x - xMin)) / span;
  const Y = (y) => M.top + PLOT_H - (PLOT_H * Math.min(y, top)) / top;
  const parts = [yAxis(sc, unit)];
  const ticks = s("g", { class: "axis", "aria-hidden": "true" });
  for (let i = 0; i <= 4; i++) {
    const x = xMin + (span * i) / 4;
    ticks.append(s("text", { x: X(x), y: H - 8, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, xFormat(x)));
  }
  parts.push(ticks);
  series.forEach((sr, i) => {
    const st = STYLES[i % STYLES.length];
    const g = s("g", { class: `series ${st.cls}`, "data-series": sr.name });
    let run = [];
    const flush = () => {
      if (run.length > 1) g.append(s("polyline", { points: run.join(" "), fill: "none", "stroke-dasharray": st.dash }));
      run = [];
    };
    for (const [x, y] of sr.points) {
      if (y === null) { flush(); continue; }
      run.push(`${X(x).toFixed(1)},${Y(y).toFixed(1)}`);
      g.append(s("circle", { cx: X(x).toFixed(1), cy: Y(y).toFixed(1), r: 2.5, "data-point": "" }));
    }
    flush();
    parts.push(g);
  });
  // target: a step line (e.g. the acknowledged weight), each value holding until the next;
  // null: none (a gap).
  const legend = series.map((sr, i) => ({ label: sr.name, cls: STYLES[i % STYLES.length].cls }));
  if (target && target.points.some(([, y]) => y !== null)) {
    const g = s("g", { class: "target" });
    target.points.forEach(([x, y], j) => {
      if (y === null) return;
      const next = j + 1 < target.points.length ? target.points[j + 1][0] : xMax;
      g.append(s("line", { x1: X(x).toFixed(1), x2: X(next).toFixed(1), y1: Y(y).toFixed(1), y2: Y(y).toFixed(1) }));
    });
    parts.push(g);
    legend.push({ label: target.name, cls: "target" });
  }
  return frame(title, desc, parts, legend);
}

// barChart draws, for each group (an analysis window), one bar per series (canary,
// baseline) side by side with its value above, and the group's label and mark (its
// verdict) beneath; unit follows the y axis's numbers.
export function barChart({ title, desc, names, groups, unit }) {
  let v = 0;
  for (const g of groups) for (const x of g.values) v = Math.max(v, x);
  const sc = scale(v), top = sc.top;
  const Y = (y) => M.top + PLOT_H - (PLOT_H * Math.min(y, top)) / top;
  const parts = [yAxis(sc, unit)];
  const slot = PLOT_W / Math.max(groups.length, 1);
  const bw = Math.min(28, (slot * 0.7) / names.length);
  groups.forEach((g, i) => {
    const x0 = M.left + slot * i + (slot - bw * names.length) / 2;
    const grp = s("g", { class: "group", "data-window": g.label });
    g.values.forEach((val, j) => {
      const st = STYLES[j % STYLES.length];
      grp.append(s("rect", { class: `bar ${st.cls}`, x: (x0 + j * bw).toFixed(1), y: Y(val).toFixed(1), width: (bw - 2).toFixed(1),
        height: Math.max(PLOT_H + M.top - Y(val), val > 0 ? 1 : 0).toFixed(1), "data-point": "" }));
      grp.append(s("text", { class: "value", x: (x0 + j * bw + (bw - 2) / 2).toFixed(1), y: (Y(val) - 4).toFixed(1), "text-anchor": "middle",
        "aria-hidden": "true" }, val.toFixed(Math.max(sc.digits, val < 10 ? 1 : 0))));
    });
    grp.append(s("text", { class: `mark ${g.mark}`, x: (M.left + slot * i + slot / 2).toFixed(1), y: H - 8, "text-anchor": "middle",
      "aria-hidden": "true" }, g.label));
    parts.push(grp);
  });
  return frame(title, desc, parts, names.map((label, j) => ({ label, cls: `bar ${STYLES[j % STYLES.length].cls}` })));
}
