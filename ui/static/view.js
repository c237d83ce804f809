// Draws the page from the state app.js keeps: the connection, the rollouts table and the
// rollout shown — its facts, its failure and revert, its progress by index, the traffic
// split over time, canary against baseline per analysis step, and what happened.

import { h, replace, clock, when, phaseLabel, ended } from "./dom.js";
import { trafficSection } from "./traffic.js";
import { analysisSection } from "./analysis.js";

const $ = (id) => document.getElementById(id);

export function render(state, shown, listed) {
  renderConnection(state);
  renderRollouts(listed, shown);
  const detail = $("detail");
  detail.hidden = !shown;
  if (!shown) return;
  renderSummary(shown);
  renderFailure(shown);
  renderIndices(shown, state.instances.get(shown.process_guid) || []);
  trafficSection(shown, state.samples.get(shown.process_guid) || [], state.acked.get(shown.process_guid) || []);
  analysisSection(shown);
  renderStory(shown, state.seen.get(shown.id) || []);
}

function renderConnection(state) {
  const text = {
    connecting: "Connecting to the event stream…",
    live: "Live: changes arrive from the event stream as they happen.",
    reconnecting: "The event stream broke: reconnecting. What is shown may be behind.",
  }[state.connection];
  const el = $("connection");
  if (el.textContent !== text) el.textContent = text;
  el.className = state.connection;
  const err = $("error");
  err.hidden = !state.error;
  if (err.textContent !== state.error) err.textContent = state.error;
}

function stepText(r) {
  return r.step === null || r.step === undefined ? "—" : `${r.step + 1} of ${r.steps_total}`;
}

function renderRollouts(list, shown) {
  $("rollouts").hidden = list.length === 0;
  $("rollouts-empty").hidden = list.length > 0;
  replace($("rollouts").tBodies[0], list.map((r) =>
    h("tr", { "data-rollout": r.id, "data-phase": r.phase, "aria-current": shown && shown.id === r.id ? "true" : null },
      h("th", { scope: "row" }, h("a", { href: "#" + encodeURIComponent(r.id) }, r.process_guid)),
      h("td", {}, `${r.from_definition_id} → ${r.to_definition_id}`),
      h("td", {}, h("span", { class: `phase ${r.phase}` }, phaseLabel(r.phase))),
      h("td", {}, stepText(r)),
      h("td", {}, `${r.updated_instances} of ${r.instances}`),
      h("td", {}, when(r.started_at)))));
}

function weights(traffic) {
  return Object.entries(traffic).sort(([a], [b]) => a.localeCompare(b)).map(([d, w]) => `${d} ${w} %`).join(", ");
}

function fact(term, value, id) {
  return [h("dt", {}, term), h("dd", { id }, value)];
}

function renderSummary(r) {
  $("detail-heading").textContent = `${r.process_guid}: ${r.from_definition_id} → ${r.to_definition_id}`;
  const pinned = location.hash.length > 1 && decodeURIComponent(location.hash.slice(1)) === r.id;
  const follow = $("follow");
  follow.hidden = !pinned;
  const st = r.strategy || {};
  replace($("summary"),
    fact("Phase", h("span", { class: `phase ${r.phase}` }, phaseLabel(r.phase)), "detail-phase"),
    fact("Canary step", stepText(r), "detail-step"),
    fact("Traffic", r.traffic ? `${weights(r.traffic)}, as every router acknowledged it (generation ${r.traffic_generation})`
      : "split by instances, as without a rollout", "detail-traffic"),
    fact("Pace", st.max_in_flight ? `${st.max_in_flight} ${st.max_in_flight === 1 ? "index" : "indices"} at once` : "—"),
    fact("Started", when(r.started_at)),
    r.finished_at ? fact("Ended", when(r.finished_at)) : null);
}

const kinds = {
  app: "app: the new definition's own fault",
  operator: "operator: stopped by hand",
  platform: "platform: cells or capacity, not the app",
};

function failureFacts(f, prefix) {
  return [
    fact("Reason", f.reason, `${prefix}-reason`),
    fact("Kind", kinds[f.kind] || f.kind),
    f.index !== undefined && f.index !== null ? fact("Index", String(f.index)) : null,
    f.definition_id ? fact("Definition", f.definition_id) : null,
    f.detail ? fact("Detail", f.detail, `${prefix}-detail`) : null,
  ];
}

function renderFailure(r) {
  const sec = $("failure");
  sec.hidden = !(r.failure || r.revert_failure || r.reverted_to);
  if (sec.hidden) return;
  replace($("failure-facts"),
    r.failure ? failureFacts(r.failure, "failure") : null,
    r.reverted_to ? fact("Reverted to", `${r.reverted_to}: every index walked back to it, start before stop`, "reverted-to") : null,
    !r.reverted_to && r.failure && r.phase === "reverting" ? fact("Revert", `walking back to ${r.from_definition_id}`) : null,
    r.revert_failure ? [fact("The revert failed too", r.revert_failure.reason), ...failureFacts(r.revert_failure, "revert-failure").slice(1)] : null);
}

function instanceText(a) {
  if (!a) return "—";
  let t = a.state;
  if (a.retiring) t += ", retiring";
  if (a.crash_count) t += `, ${a.crash_count} ${a.crash_count === 1 ? "crash" : "crashes"}`;
  if (a.presence && a.presence !== "ORDINARY") t += `, ${a.presence.toLowerCase()}`;
  return t;
}

// indexStatus says where an index stands: its target is the new definition walking forward,
// the old one walking back.
function indexStatus(r, i, at) {
  if ((r.given_up_indices || []).includes(i)) return ["given-up", "given up: the old instance serves on"];
  const back = ["reverting", "reverted", "canceled"].includes(r.phase);
  const target = back ? r.from_definition_id : r.to_definition_id;
  const mine = at.filter((a) => a.definition_id === target);
  const others = at.filter((a) => a.definition_id !== target && !a.retiring);
  if (mine.some((a) => a.state === "RUNNING") && others.length === 0) return ["done", `on ${target}`];
  if (mine.length > 0) {
    const serving = [...new Set(others.map((a) => a.definition_id))].join(", ");
    return ["replacing", `replacing: ${target} starting` + (serving ? `, ${serving} still serving` : "")];
  }
  return ["waiting", ended(r.phase) ? `not on ${target}` : "waiting"];
}

function renderIndices(r, instances) {
  const n = Math.max(r.instances, ...instances.map((a) => a.index + 1));
  const defs = [r.from_definition_id, r.to_definition_id];
  for (const a of instances) if (!defs.includes(a.definition_id)) defs.push(a.definition_id);
  const line = $("progress-line");
  replace(line, h("progress", { max: Math.max(r.instances, 1), value: r.updated_instances, id: "progress-bar", "aria-label": "indices updated" }),
    ` ${r.updated_instances} of ${r.instances} indices updated`,
    (r.given_up_indices || []).length ? `; given up: ${r.given_up_indices.join(", ")}` : "");
  const table = $("indices");
  replace(table.tHead, h("tr", {}, h("th", { scope: "col" }, "Index"),
    defs.map((d, j) => h("th", { scope: "col" }, j === 0 ? `${d} (from)` : j === 1 ? `${d} (to)` : d)),
    h("th", { scope: "col" }, "Status")));
  const rows = [];
  for (let i = 0; i < n; i++) {
    const at = instances.filter((a) => a.index === i);
    const [cls, status] = indexStatus(r, i, at);
    rows.push(h("tr", { "data-index": i, class: cls }, h("th", { scope: "row" }, String(i)),
      defs.map((d) => h("td", {}, instanceText(at.find((a) => a.definition_id === d && !a.retiring) || at.find((a) => a.definition_id === d)))),
      h("td", {}, h("span", { class: `status ${cls}` }, status))));
  }
  replace(table.tBodies[0], rows);
}

// failureAt is about when the rollout failed, which its report does not say: the verdict
// that failed it, else when the page saw it stop walking forward, else its end.
function failureAt(r, seen) {
  if (r.failure.reason === "analysis") {
    const failed = (r.analysis || []).filter((v) => v.verdict === "fail");
    if (failed.length) return failed[0].at;
  }
  const stopped = seen.find((e) => ["reverting", "paused", "failed", "reverted"].includes(e.phase));
  return stopped ? stopped.at : r.finished_at;
}

// renderStory tells the rollout's course in time order: its start, what the page saw change,
// each verdict, the failure, and its end.
function renderStory(r, seen) {
  const items = [{ at: r.started_at, text: `Began: ${r.process_guid} from ${r.from_definition_id} to ${r.to_definition_id}, ${r.instances} instances` +
    (r.steps_total ? `, ${r.steps_total} canary ${r.steps_total === 1 ? "step" : "steps"}` : "") }];
  for (const e of seen) items.push({ at: e.at, text: `Seen: ${e.text}` });
  for (const v of r.analysis || []) {
    const where = v.step === null || v.step === undefined ? "background analysis" : `step ${v.step + 1} analysis`;
    items.push({ at: v.at, text: `${where}, window ${v.window}: ${v.verdict}. ${v.reason}`, cls: v.verdict });
  }
  if (r.failure) {
    items.push({ at: failureAt(r, seen), approx: true, cls: "fail",
      text: `Failed: ${r.failure.reason} (${r.failure.kind})` + (r.failure.detail ? `: ${r.failure.detail}` : "") });
  }
  if (r.revert_failure) {
    items.push({ at: r.finished_at || Date.now() * 1e6, approx: true, cls: "fail",
      text: `The revert failed: ${r.revert_failure.reason}` + (r.revert_failure.detail ? `: ${r.revert_failure.detail}` : "") });
  }
  if (r.finished_at) {
    const end = r.reverted_to ? `Ended reverted: every index back on ${r.reverted_to}` : `Ended ${phaseLabel(r.phase)}`;
    items.push({ at: r.finished_at, text: end, cls: r.phase, last: true });
  }
  // A stable sort keeps same-time entries in the order above; the end stays last.
  items.sort((a, b) => (a.last ? 1 : 0) - (b.last ? 1 : 0) || a.at - b.at);
  replace($("story"), items.map((it) => h("li", { class: it.cls },
    h("time", { datetime: new Date(it.at / 1e6).toISOString(), title: it.approx ? "about then" : null }, clock(it.at)),
    " ", it.text)));
}
