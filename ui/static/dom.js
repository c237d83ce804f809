// Small helpers to build the page's elements. Everything the API says is put in as text
// (textContent, attributes), never as markup, so nothing it reports can inject into the page.

const SVG_NS = "http://www.w3.org/2000/svg";

// h builds an HTML element: h("td", {class: "n"}, "3", child, ...). Attributes that are
// null, undefined or false are left out; children that are null or false too.
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

// s builds an SVG element the same way.
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// replace puts children in place of what el holds.
export function replace(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

// clock formats Unix nanoseconds (or a Date) as a local time of day.
export function clock(t) {
  const d = t instanceof Date ? t : new Date(t / 1e6);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

// when formats Unix nanoseconds as a local date and time, for a datetime attribute and text.
export function when(ns) {
  const d = new Date(ns / 1e6);
  return h("time", { datetime: d.toISOString() }, d.toLocaleString());
}

// pct formats a rate (0–1) as a percentage.
export function pct(rate, digits = 2) {
  return (100 * rate).toFixed(digits) + " %";
}

// ms formats milliseconds.
export function ms(v) {
  return (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + " ms";
}

// phaseLabel is a phase in words.
export function phaseLabel(phase) {
  return (phase || "unknown").replaceAll("_", " ");
}

// ended says whether a rollout in this phase is over.
export function ended(phase) {
  return ["completed", "reverted", "canceled", "failed", "superseded"].includes(phase);
}
