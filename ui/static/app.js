// The page's state and where it comes from: the rollouts list once and after every
// (re)connection, the event stream for every change, the instances of the rollout shown,
// and the routers' counts sampled every two seconds. view.js draws it.

import { render } from "./view.js";
import { renderGroups } from "./groups.js";

// The API is the origin that served this page; its routes are relative to /ui/, so the
// page also works behind a prefix.
const API = new URL("../", document.baseURI);
const SAMPLE_EVERY_MS = 2000;
const KEEP_SAMPLES = 300; // ten minutes at one sample every two seconds
const KEEP_ROLLOUTS = 25; // ended rollouts listed, beside every one in progress

const state = {
  rollouts: new Map(), // rollout id → rollout, as last reported
  instances: new Map(), // process guid → its instances
  samples: new Map(), // process guid → [{at, routers, defs: {definition id → {requests, errors}}}]
  acked: new Map(), // process guid → [[at, {definition id → weight} | null]], as the routers acknowledged
  seen: new Map(), // rollout id → [{at, text}]: changes seen on the stream since the page loaded
  groups: [], // rollout groups as list answers them, newest first
  connection: "connecting", // connecting | live | reconnecting
  error: "",
};

async function post(path, body) {
  const res = await fetch(new URL(path, API), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
  const out = await res.json().catch(() => null);
  if (!res.ok) throw new Error((out && out.error && out.error.message) || `${res.status} ${res.statusText}`);
  return out;
}

// selected is the rollout the page shows: the one the address names (#<rollout id>), else
// the newest in progress, else the newest.
function selected() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (id && state.rollouts.has(id)) return state.rollouts.get(id);
  let best = null;
  for (const r of state.rollouts.values()) {
    const live = !r.finished_at, bestLive = best && !best.finished_at;
    if (!best || (live && !bestLive) || (live === bestLive && r.started_at > best.started_at)) best = r;
  }
  return best;
}

// listed are the rollouts the table shows: every one in progress, then the latest ended.
function listed() {
  const all = [...state.rollouts.values()].sort((a, b) => b.started_at - a.started_at);
  const live = all.filter((r) => !r.finished_at);
  return live.concat(all.filter((r) => r.finished_at).slice(0, KEEP_ROLLOUTS));
}

let drawing = false;
function draw() {
  if (drawing) return;
  drawing = true;
  requestAnimationFrame(() => {
    drawing = false;
    render(state, selected(), listed());
    renderGroups(state.groups);
  });
}

async function loadRollouts() {
  try {
    const { rollouts } = await post("v1/rollouts/list", {});
    state.rollouts = new Map(rollouts.map((r) => [r.id, r]));
    for (const r of rollouts) noteAcked(r);
    state.error = "";
  } catch (e) {
    state.error = `Could not read the rollouts: ${e.message}. Trying again.`;
    setTimeout(loadRollouts, 2000);
  }
  draw();
  loadInstances();
}

// loadGroups reads the rollout groups; bursts of changes (members ending) read them at most
// once a second.
let groupsTimer = null;
function loadGroups() {
  if (groupsTimer) return;
  groupsTimer = setTimeout(async () => {
    groupsTimer = null;
    try {
      const { rollout_groups } = await post("v1/rollout_groups/list", {});
      state.groups = rollout_groups;
    } catch (e) {
      state.error = `Could not read the rollout groups: ${e.message}`;
    }
    draw();
  }, state.groups.length ? 1000 : 0);
}

// loadInstances reads the instances of the shown rollout's LRP; changes to them come as
// events in bursts, so a read is made at most every 300 ms.
let instancesTimer = null;
function loadInstances() {
  if (instancesTimer) return;
  instancesTimer = setTimeout(async () => {
    instancesTimer = null;
    const r = selected();
    if (!r) return;
    try {
      const { actual_lrps } = await post("v1/actual_lrps/list", { process_guid: r.process_guid });
      state.instances.set(r.process_guid, actual_lrps);
    } catch (e) {
      state.error = `Could not read the instances of ${r.process_guid}: ${e.message}`;
    }
    draw();
  }, 300);
}

// noteAcked records the split the routers acknowledged for a rollout's LRP when it changed.
function noteAcked(r) {
  if (r.finished_at) return;
  const hist = state.acked.get(r.process_guid) || [];
  const last = hist[hist.length - 1];
  const w = r.traffic || null;
  if (!last || JSON.stringify(last[1]) !== JSON.stringify(w)) {
    hist.push([Date.now() * 1e6, w]);
    state.acked.set(r.process_guid, hist);
  }
}

// noteChange keeps, for the story, what changed between two reports of a rollout.
function noteChange(before, after) {
  const said = [];
  if (!before || before.phase !== after.phase) said.push(`phase ${after.phase.replaceAll("_", " ")}`);
  if (after.step !== null && after.step !== undefined && (!before || before.step !== after.step)) {
    said.push(`step ${after.step + 1} of ${after.steps_total}`);
  }
  if (before && before.traffic_generation !== after.traffic_generation && after.traffic) {
    const w = Object.entries(after.traffic).map(([d, p]) => `${d} ${p} %`).join(", ");
    said.push(`the routers acknowledged ${w} (generation ${after.traffic_generation})`);
  }
  if (before && before.updated_instances !== after.updated_instances) {
    said.push(`${after.updated_instances} of ${after.instances} indices updated`);
  }
  if (said.length === 0) return;
  const list = state.seen.get(after.id) || [];
  list.push({ at: Date.now() * 1e6, phase: after.phase, text: said.join("; ") });
  state.seen.set(after.id, list);
}

function onRollout(r) {
  noteChange(state.rollouts.get(r.id), r);
  state.rollouts.set(r.id, r);
  noteAcked(r);
  draw();
  const shown = selected();
  if (shown && shown.process_guid === r.process_guid) loadInstances();
}

function guidOf(data) {
  return data.process_guid || (data.after && data.after.process_guid) || (data.desired_lrp && data.desired_lrp.process_guid);
}

// connect opens the event stream. The browser reconnects by itself after a network error
// (resuming after the last event it had); when it gives up (the API answered an error) the
// page opens a new stream after a pause, up to ten seconds. Every (re)connection re-reads
// the rollouts, so nothing missed while away stays missing.
let retryMS = 500;
function connect() {
  const es = new EventSource(new URL("v1/events/lrp_instances", API));
  es.onopen = () => {
    state.connection = "live";
    retryMS = 500;
    loadRollouts();
    loadGroups();
  };
  es.onerror = () => {
    state.connection = "reconnecting";
    draw();
    if (es.readyState === EventSource.CLOSED) {
      setTimeout(connect, retryMS);
      retryMS = Math.min(retryMS * 2, 10000);
    }
  };
  es.addEventListener("rollout_changed", (e) => {
    const r = JSON.parse(e.data);
    onRollout(r);
    if (r.group_id) loadGroups();
  });
  es.addEventListener("rollout_group_changed", () => loadGroups());
  for (const name of ["actual_lrp_instance_created", "actual_lrp_instance_changed", "actual_lrp_instance_removed", "actual_lrp_instance_crashed"]) {
    es.addEventListener(name, (e) => {
      const shown = selected();
      if (shown && guidOf(JSON.parse(e.data)) === shown.process_guid) loadInstances();
    });
  }
}

// sample reads what the live routers counted for the shown rollout's LRP.
async function sample() {
  const r = selected();
  if (!r || document.hidden) return;
  try {
    const { telemetry } = await post("v1/routers/telemetry", { process_guid: r.process_guid });
    const defs = {};
    for (const d of telemetry.definitions) defs[d.definition_id] = { requests: d.requests, errors: d.errors };
    const routers = telemetry.routers.map((x) => `${x.router_id}@${x.started_at}`).join(",");
    const list = state.samples.get(r.process_guid) || [];
    list.push({ at: telemetry.at, routers, defs });
    if (list.length > KEEP_SAMPLES) list.splice(0, list.length - KEEP_SAMPLES);
    state.samples.set(r.process_guid, list);
    draw();
  } catch (e) {
    // A missed sample is a gap in the chart; the connection status says when the API is away.
  }
}

window.addEventListener("hashchange", () => {
  draw();
  loadInstances();
});

connect();
setInterval(sample, SAMPLE_EVERY_MS);
sample();
