// The rollout groups section: every group, newest first — its state and why, a progress bar
// of its members decided, each wave's counts by member state, and the budgets in use. The
// list is read once per (re)connection, after every rollout_group_changed event, and, while a
// group rolls, after its members' rollout_changed events (at most once a second).

import { h, replace, when } from "./dom.js";

const $ = (id) => document.getElementById(id);

const ORDER = ["pending", "rolling", "completed", "reverted", "failed", "skipped"];

function counts(c) {
  const parts = ORDER.filter((s) => c && c[s] > 0).map((s) => `${c[s]} ${s}`);
  return parts.length ? parts.join(", ") : "no members";
}

function decided(g) {
  let done = 0, all = 0;
  for (const w of g.waves) {
    for (const [state, n] of Object.entries(w.counts || {})) {
      all += n;
      if (state !== "pending" && state !== "rolling") done += n;
    }
  }
  return { done, all };
}

// renderGroups draws groups (as list answers them) into the section.
export function renderGroups(groups) {
  const empty = $("groups");
  const table = $("group-table");
  empty.hidden = groups.length > 0;
  table.hidden = groups.length === 0;
  replace(table.tBodies[0], groups.map((g) => {
    const { done, all } = decided(g);
    const b = g.budgets || {};
    return h("tr", { "data-group": g.group_id, "data-state": g.state },
      h("th", { scope: "row" }, g.group_id),
      h("td", {}, h("span", { class: `phase ${g.state}` }, g.state.replaceAll("_", " ")),
        g.reason ? h("div", { class: "reason" }, g.reason) : null),
      h("td", {}, `${g.wave + 1} of ${g.waves.length}`),
      h("td", {}, h("progress", { max: Math.max(all, 1), value: done, "aria-label": "members decided" }), ` ${done} of ${all}`),
      h("td", {}, h("ol", { class: "waves" }, g.waves.map((w, i) =>
        h("li", { "data-wave": i, "data-state": w.state }, `${w.percent} %: ${w.state} — ${counts(w.counts)}`)))),
      h("td", {}, `${b.lrps_in_use} of ${b.max_concurrent_lrps} rolling; ${b.per_cell_max_in_use} of ${b.max_concurrent_per_cell || "∞"} starting on one cell`),
      h("td", {}, when(g.created_at)));
  }));
}
