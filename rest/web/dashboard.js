// The weir dashboard: polls the job's REST endpoint (same origin, the JSON
// routes of docs/REST.md) once a second and draws what it reads. No
// framework and no build step; every text from the job goes through
// textContent or an SVG attribute, never through HTML parsing.
"use strict";

const POLL_MS = 1000;
const RATE_WINDOW_MS = 5 * 60 * 1000;
const CHART_CHECKPOINTS = 20;
const SVG_NS = "http://www.w3.org/2000/svg";
const NO_WATERMARK = "-9223372036854775808";
const SERIES_COLOURS = ["#5b8ff9", "#e8363b", "#52c41a", "#fa8c16", "#722ed1", "#13c2c2", "#eb2f96"];

const state = {
  token: takeToken(),
  jobId: null,
  selected: null,       // vertex id whose subtasks are shown
  lastCounts: new Map(), // vertex id -> {t, count}
  rates: new Map(),      // vertex id -> [{t, rate}]
  checkpointParts: new Map(), // "cid/vid" -> subtasks of that checkpoint
  configShown: null,     // job id whose configuration is drawn
  timer: null,
  polling: false,
};

class TokenNeeded extends Error {}

// ---- fetching ----

/** The token from a `#token=...` fragment (then dropped from the address
 *  bar) or from this tab's earlier visit. */
function takeToken() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m) {
    const token = decodeURIComponent(m[1]);
    sessionStorage.setItem("weir-token", token);
    history.replaceState(null, "", location.pathname + location.search);
    return token;
  }
  return sessionStorage.getItem("weir-token");
}

async function getJson(path) {
  const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
  const response = await fetch(path, { headers, cache: "no-store" });
  if (response.status === 401) throw new TokenNeeded("this endpoint needs its bearer token");
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const why = body && body.errors ? body.errors.join("; ") : response.statusText;
    throw new Error(`${path}: HTTP ${response.status}: ${why}`);
  }
  return body;
}

/** The parts of the shown checkpoints not read yet (a checkpoint in the
 *  history has ended, so its parts never change). */
async function fetchCheckpointParts(base, history, vertices) {
  const wanted = [];
  for (const c of history.slice(0, CHART_CHECKPOINTS)) {
    for (const v of vertices) {
      const key = `${c.id}/${v.id}`;
      if (!state.checkpointParts.has(key)) wanted.push([key, `${base}/checkpoints/details/${c.id}/subtasks/${v.id}`]);
    }
  }
  await Promise.all(wanted.map(async ([key, path]) => {
    try {
      // Subtasks that acknowledged (of a failed one, none: "pending_or_failed").
      const subtasks = (await getJson(path)).subtasks || [];
      state.checkpointParts.set(key, subtasks.filter(s => s.status === "completed"));
    } catch (e) {
      if (e instanceof TokenNeeded) throw e;
      state.checkpointParts.set(key, []); // dropped from the history meanwhile
    }
  }));
}

/** Of the job's metrics (Flink's names), the restarts and the latency
 *  histograms' medians and p99s of the selected vertex. */
async function fetchJobMetrics(base, metricIds) {
  const wanted = metricIds.map(m => m.id).filter(id => id === "numRestarts" ||
    (id.includes(`.operator_id.${state.selected}.`) && /\.latency_(median|p99)$/.test(id)));
  return wanted.length ? getJson(`${base}/metrics?get=${wanted.map(encodeURIComponent).join(",")}`) : [];
}

/** Subtask index -> {median, p99} in ms: the latency from the sources
 *  (the slowest source's, when several feed the vertex). */
function latencyOf(metrics, vertexId) {
  const bySubtask = new Map();
  for (const m of metrics) {
    const match = /\.operator_id\.([0-9a-f]+)\.operator_subtask_index\.(\d+)\.latency_(median|p99)$/.exec(m.id);
    if (!match || match[1] !== vertexId) continue;
    const e = bySubtask.get(Number(match[2])) || {};
    e[match[3]] = Math.max(e[match[3]] || 0, Number(m.value));
    bySubtask.set(Number(match[2]), e);
  }
  return bySubtask;
}

// ---- the poll loop ----

async function poll() {
  clearTimeout(state.timer);
  if (state.polling) return;
  state.polling = true;
  try {
    await refresh();
    setStatus("live", "updated " + clock(Date.now()));
  } catch (e) {
    if (e instanceof TokenNeeded) {
      showTokenForm();
      setStatus("error", "token required");
      state.polling = false;
      return; // until a token is given
    }
    setStatus("error", "cannot read the endpoint: " + e.message);
  }
  state.polling = false;
  state.timer = setTimeout(poll, POLL_MS);
}

async function refresh() {
  const overview = await getJson("/jobs/overview");
  if (!overview.jobs.length) {
    document.getElementById("job-name").textContent = "no job yet";
    return;
  }
  const jobId = overview.jobs[0].jid;
  if (jobId !== state.jobId) resetFor(jobId);
  const base = `/jobs/${jobId}`;
  const [job, checkpoints, exceptions, metricIds] = await Promise.all([
    getJson(base), getJson(`${base}/checkpoints`), getJson(`${base}/exceptions`), getJson(`${base}/metrics`)]);
  const vertices = job.vertices;
  const pressures = await Promise.all(vertices.map(v => getJson(`${base}/vertices/${v.id}/backpressure`)));
  if (!vertices.some(v => v.id === state.selected)) state.selected = vertices.length ? vertices[0].id : null;
  let selected = null;
  if (state.selected) {
    const [details, watermarks] = await Promise.all([
      getJson(`${base}/vertices/${state.selected}`), getJson(`${base}/vertices/${state.selected}/watermarks`)]);
    selected = { details, watermarks, pressure: pressures[vertices.findIndex(v => v.id === state.selected)] };
  }
  const metrics = await fetchJobMetrics(base, metricIds);
  if (selected) selected.latency = latencyOf(metrics, state.selected);
  // The chart and the table show checkpoints that ended (the counts show
  // those in progress): an ended one's parts never change.
  const ended = checkpoints.history.filter(c => c.status !== "IN_PROGRESS");
  await fetchCheckpointParts(base, ended, vertices);
  if (state.configShown !== jobId) {
    const [config, checkpointConfig] = await Promise.all([getJson(`${base}/config`), getJson(`${base}/checkpoints/config`)]);
    drawConfig(config, checkpointConfig);
    state.configShown = jobId;
  }
  recordRates(job);
  drawHeader(job);
  drawJobGraph(vertices, pressures, (job.plan && job.plan.nodes) || []);
  drawSubtasks(selected);
  drawRateChart(vertices);
  drawCheckpointCounts(checkpoints);
  drawCheckpointChart(ended, vertices);
  drawCheckpointHistory(ended);
  drawExceptions(exceptions, metrics);
}

function resetFor(jobId) {
  state.jobId = jobId;
  state.selected = null;
  state.lastCounts.clear();
  state.rates.clear();
  state.checkpointParts.clear();
  state.configShown = null;
}

/** Records/s of each vertex since the previous poll, from its counters
 *  and the server's clock: out of a source (it reads no exchange), into
 *  every other stage. */
function recordRates(job) {
  const t = job.now;
  for (const v of job.vertices) {
    const m = v.metrics;
    const count = m["read-records"] > 0 ? m["read-records"] : m["write-records"];
    const last = state.lastCounts.get(v.id);
    if (last && t - last.t < 200) continue; // too close to measure
    state.lastCounts.set(v.id, { t, count });
    if (!last || count < last.count) continue; // first reading, or a restart
    const series = state.rates.get(v.id) || [];
    series.push({ t, rate: (count - last.count) * 1000 / (t - last.t) });
    while (series.length && series[0].t < t - RATE_WINDOW_MS) series.shift();
    state.rates.set(v.id, series);
  }
}

// ---- drawing ----

function drawHeader(job) {
  document.getElementById("job-name").textContent = job.name;
  const badge = document.getElementById("job-state");
  badge.textContent = job.state;
  badge.dataset.state = job.state;
  const workers = job.vertices.reduce((n, v) => Math.max(n, v.parallelism), 0);
  document.getElementById("job-facts").textContent =
    `${job.jid} · started ${clock(job["start-time"])} · ${duration(job.duration)} · parallelism ${workers}`;
}

/** Columns by depth (a source's vertex in the first; every other one
 *  right of all its inputs), rows in plan order within a column. */
function layoutGraph(vertices, nodes) {
  const inputs = new Map(nodes.map(n => [n.id, (n.inputs || []).map(i => i.id)]));
  const depth = new Map(vertices.map(v => [v.id, 0]));
  for (let round = 0; round < vertices.length; round++) {
    for (const v of vertices) {
      for (const from of inputs.get(v.id) || []) {
        if (depth.has(from)) depth.set(v.id, Math.max(depth.get(v.id), depth.get(from) + 1));
      }
    }
  }
  const rows = new Map();
  const place = new Map();
  for (const v of vertices) {
    const col = depth.get(v.id);
    const row = rows.get(col) || 0;
    rows.set(col, row + 1);
    place.set(v.id, { col, row });
  }
  return { place, columns: Math.max(1, ...[...rows.keys()].map(c => c + 1)), rows: Math.max(1, ...rows.values()) };
}

function drawJobGraph(vertices, pressures, nodes) {
  const svg = clear(document.getElementById("job-graph"));
  const W = 250, H = 130, GAP = 90, VGAP = 24, PAD = 8;
  const { place, columns, rows } = layoutGraph(vertices, nodes);
  const width = Math.max(2 * PAD + columns * W + (columns - 1) * GAP, 900);
  const height = 2 * PAD + rows * H + (rows - 1) * VGAP;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("preserveAspectRatio", "xMinYMid meet");
  svg.style.height = `${Math.max(170, 40 + rows * (H + VGAP))}px`;
  const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" },
    svgEl("defs", {}, svg));
  svgEl("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }, marker);
  const at = id => { const p = place.get(id); return { x: PAD + p.col * (W + GAP), y: PAD + p.row * (H + VGAP) }; };
  for (const n of nodes) {
    if (!place.has(n.id)) continue;
    for (const input of n.inputs || []) {
      if (!place.has(input.id)) continue;
      const a = at(input.id), b = at(n.id);
      const x1 = a.x + W + 2, y1 = a.y + H / 2, x2 = b.x - 3, y2 = b.y + H / 2;
      const mx = (x1 + x2) / 2;
      svgEl("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)",
        "data-ship-strategy": input.ship_strategy }, svg);
      text(svg, mx, (y1 + y2) / 2 - 6, input.ship_strategy, "edge-label").setAttribute("text-anchor", "middle");
    }
  }
  vertices.forEach((v, i) => {
    const { x, y } = at(v.id);
    const pressure = pressures[i];
    const level = (pressure["backpressure-level"] || "").toUpperCase();
    const worst = key => pressure.subtasks.reduce((m, s) => Math.max(m, s[key]), 0);
    const g = svgEl("g", { class: "vertex" + (v.id === state.selected ? " selected" : ""),
      "data-vertex-id": v.id, "data-backpressure": level }, svg);
    g.addEventListener("click", () => { state.selected = v.id; poll(); });
    svgEl("title", {}, g).textContent = `${v.name}\n${v.id}`;
    svgEl("rect", { class: "box", x, y, width: W, height: H, rx: 6 }, g);
    const lines = v.name.split(" -> ");
    const titles = lines.length > 2 ? [lines[0], `… ${lines.length - 1} more`] : lines;
    titles.forEach((line, n) => text(g, x + 10, y + 20 + n * 16, shorten(line, 32), "title"));
    text(g, x + 10, y + 60, `Parallelism: ${v.parallelism} · ${v.status}`);
    text(g, x + 10, y + 78, `Backpressured (max): ${percent(worst("ratio"))}`);
    text(g, x + 10, y + 96, `Busy (max): ${percent(worst("busyRatio"))}`);
    text(g, x + 10, y + 114, `Low watermark: ${v["low-watermark"] == null ? "—" : watermark(String(v["low-watermark"]))}`);
    text(g, x + W - 10, y + 20, level || "…", "level").setAttribute("text-anchor", "end");
  });
}

function drawSubtasks(selected) {
  const body = clear(document.querySelector("#subtasks tbody"));
  if (!selected) return;
  document.getElementById("selected-name").textContent = selected.details.name;
  const ratios = new Map(selected.pressure.subtasks.map(s => [s.subtask, s]));
  const marks = new Map(selected.watermarks.map(w => [w.id.split(".")[0], w.value]));
  for (const s of selected.details.subtasks) {
    const r = ratios.get(s.subtask) || { ratio: 0, busyRatio: 0, idleRatio: 0, "backpressure-level": "" };
    const tr = row(body, [s.subtask, s["taskmanager-id"], s.status,
      count(s.metrics["read-records"]), count(s.metrics["write-records"])]);
    tr.children[3].className = tr.children[4].className = "num";
    drawRatioBar(cell(tr, ""), r);
    cell(tr, r["backpressure-level"].toUpperCase()).dataset.backpressure = r["backpressure-level"].toUpperCase();
    const mark = marks.get(String(s.subtask));
    cell(tr, mark === undefined ? "—" : watermark(mark));
    const latency = selected.latency.get(s.subtask);
    cell(tr, latency ? `${millis(latency.median)} / ${millis(latency.p99)}` : "—").className = "num";
  }
}

/** A stacked bar of one subtask's busy, backpressured and idle shares. */
function drawRatioBar(td, r) {
  const svg = svgEl("svg", { class: "ratio-bar", viewBox: "0 0 100 10", preserveAspectRatio: "none" }, td);
  let x = 0;
  for (const [key, cls] of [["busyRatio", "ratio-busy"], ["ratio", "ratio-backpressured"], ["idleRatio", "ratio-idle"]]) {
    const w = Math.max(0, Math.min(100 - x, r[key] * 100));
    svgEl("rect", { class: cls, x, y: 0, width: w, height: 10 }, svg);
    x += w;
  }
  const label = document.createElement("span");
  label.className = "ratio-text";
  label.textContent = `${percent(r.busyRatio)} / ${percent(r.ratio)} / ${percent(r.idleRatio)}`;
  td.appendChild(label);
}

function drawRateChart(vertices) {
  const svg = clear(document.getElementById("rate-chart"));
  const W = 640, H = 220, L = 56, R = 12, B = 24;
  const T = 14 + 14 * vertices.length; // a legend line per vertex above the plot
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const all = [...state.rates.values()].flat();
  if (all.length === 0) {
    text(svg, W / 2, H / 2, "measuring… (two polls needed)", "empty").setAttribute("text-anchor", "middle");
    return;
  }
  const tMax = Math.max(...all.map(p => p.t));
  const tMin = tMax - Math.min(RATE_WINDOW_MS, Math.max(30000, tMax - Math.min(...all.map(p => p.t))));
  const yMax = niceCeiling(Math.max(1, ...all.map(p => p.rate)) * 1.1);
  const px = t => L + (t - tMin) / (tMax - tMin) * (W - L - R);
  const py = v => H - B - v / yMax * (H - T - B);
  drawYAxis(svg, yMax, py, L, W - R, count);
  svgEl("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }, svg);
  text(svg, L, H - 6, `-${duration(tMax - tMin)}`);
  text(svg, W - R, H - 6, "now").setAttribute("text-anchor", "end");
  vertices.forEach((v, i) => {
    const points = (state.rates.get(v.id) || []).filter(p => p.t >= tMin);
    const colour = SERIES_COLOURS[i % SERIES_COLOURS.length];
    if (points.length) {
      svgEl("polyline", { class: "rate-line", stroke: colour,
        points: points.map(p => `${px(p.t).toFixed(1)},${py(p.rate).toFixed(1)}`).join(" ") }, svg);
      const newest = points[points.length - 1]; // a dot, so that a first reading shows too
      svgEl("circle", { cx: px(newest.t), cy: py(newest.rate), r: 3, fill: colour }, svg);
    }
    const direction = v.metrics["read-records"] > 0 ? "in" : "out";
    const last = points.length ? count(points[points.length - 1].rate) + "/s" : "—";
    const label = text(svg, L, 12 + 14 * i, `${shorten(v.name, 60)} ${direction}: ${last}`, "series-label");
    label.setAttribute("fill", colour);
  });
}

function drawCheckpointCounts(checkpoints) {
  const c = checkpoints.counts;
  document.getElementById("checkpoint-counts").textContent =
    `completed ${c.completed} · failed ${c.failed} · in progress ${c.in_progress} · restored ${c.restored}`;
}

/** Per checkpoint: its end-to-end duration behind one bar per subtask
 *  (stage by stage), stacked as the subtask spent it: waiting for its
 *  first barrier, aligning, the synchronous and the asynchronous part. */
function drawCheckpointChart(history, vertices) {
  const svg = clear(document.getElementById("checkpoint-chart"));
  const W = 1300, H = 240, L = 56, R = 12, T = 10, B = 24;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const shown = history.slice(0, CHART_CHECKPOINTS).reverse();
  if (shown.length === 0) {
    text(svg, W / 2, H / 2, "no checkpoint has ended yet", "empty").setAttribute("text-anchor", "middle");
    return;
  }
  const parts = c => vertices.flatMap(v => state.checkpointParts.get(`${c.id}/${v.id}`) || []);
  const total = s => s.start_delay + s.alignment.duration + s.checkpoint.sync + s.checkpoint.async;
  const yMax = niceCeiling(Math.max(1, ...shown.map(c => Math.max(c.end_to_end_duration, ...parts(c).map(total)))));
  const py = v => H - B - v / yMax * (H - T - B);
  drawYAxis(svg, yMax, py, L, W - R, ms => duration(ms));
  svgEl("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }, svg);
  const slot = (W - L - R) / CHART_CHECKPOINTS;
  shown.forEach((c, i) => {
    const x0 = L + i * slot + slot * 0.08, width = slot * 0.84;
    const g = svgEl("g", { class: "checkpoint-bars", "data-checkpoint-id": c.id }, svg);
    svgEl("title", {}, g).textContent = `checkpoint ${c.id} ${c.status}: ${duration(c.end_to_end_duration)} end to end`;
    svgEl("rect", { class: "bar-e2e" + (c.status === "FAILED" ? " failed" : ""), x: x0, y: py(c.end_to_end_duration),
      width, height: H - B - py(c.end_to_end_duration) }, g);
    const subtasks = parts(c);
    const inner = width / Math.max(1, subtasks.length);
    subtasks.forEach((s, n) => {
      let base = 0;
      const bar = svgEl("g", {}, g);
      svgEl("title", {}, bar).textContent = `checkpoint ${c.id}, subtask ${s.index} (worker ${s.worker}): ` +
        `start delay ${s.start_delay} ms, alignment ${s.alignment.duration} ms, ` +
        `sync ${s.checkpoint.sync} ms, async ${s.checkpoint.async} ms`;
      for (const [value, cls] of [[s.start_delay, "bar-delay"], [s.alignment.duration, "bar-align"],
        [s.checkpoint.sync, "bar-sync"], [s.checkpoint.async, "bar-async"]]) {
        svgEl("rect", { class: cls, x: x0 + n * inner + inner * 0.15, y: py(base + value), width: inner * 0.7,
          height: py(base) - py(base + value) }, bar);
        base += value;
      }
    });
    text(svg, x0 + width / 2, H - 8, String(c.id)).setAttribute("text-anchor", "middle");
  });
}

function drawCheckpointHistory(history) {
  const body = clear(document.querySelector("#checkpoint-history tbody"));
  if (history.length === 0) {
    emptyRow(body, "no checkpoint has ended yet", 8);
    return;
  }
  for (const c of history) {
    const tr = row(body, [c.id, c.status, c.checkpoint_type, clock(c.trigger_timestamp), duration(c.end_to_end_duration),
      bytes(c.state_size), bytes(c.persisted_data), `${c.num_acknowledged_subtasks}/${c.num_subtasks}`]);
    tr.dataset.status = c.status;
    tr.dataset.checkpointId = c.id;
    if (c.status === "FAILED") tr.title = c.failure_message || "";
  }
}

function drawExceptions(exceptions, metrics) {
  const body = clear(document.querySelector("#exceptions tbody"));
  const entries = exceptions.exceptionHistory.entries;
  const restarts = metrics.find(m => m.id === "numRestarts");
  document.getElementById("restart-count").textContent =
    `restarts ${restarts ? restarts.value : entries.filter(e => e.restarted).length}`;
  if (entries.length === 0) {
    emptyRow(body, "no failure so far", 4);
    return;
  }
  for (const e of entries) {
    const tr = row(body, [clock(e.timestamp), e.taskName || "—", e.restarted ? "yes" : "no"]);
    cell(tr, e.stacktrace).className = "message";
  }
}

function drawConfig(config, checkpointConfig) {
  const body = clear(document.querySelector("#config tbody"));
  const exec = config["execution-config"];
  const user = exec["user-config"] || {};
  const heading = title => { const th = document.createElement("th"); th.colSpan = 2; th.textContent = title; body.insertRow().appendChild(th); };
  heading("execution");
  for (const k of ["execution-mode", "restart-strategy", "job-parallelism", "object-reuse-mode"]) row(body, [k, String(exec[k])]);
  heading("checkpoints");
  for (const [k, v] of Object.entries(checkpointConfig)) row(body, [k, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)]);
  heading("weir keys (docs: configs/README.md)");
  for (const k of Object.keys(user).sort()) row(body, [k, user[k]]);
  document.getElementById("config-summary").textContent =
    `${Object.keys(user).length} weir keys; checkpoints every ${duration(checkpointConfig.interval)} ` +
    `(${checkpointConfig.mode}); parallelism ${exec["job-parallelism"]}`;
}

function drawYAxis(svg, yMax, py, left, right, format) {
  for (let i = 0; i <= 4; i++) {
    const v = yMax * i / 4;
    svgEl("line", { class: i === 0 ? "axis" : "gridline", x1: left, y1: py(v), x2: right, y2: py(v) }, svg);
    text(svg, left - 6, py(v) + 4, format(v)).setAttribute("text-anchor", "end");
  }
  svgEl("line", { class: "axis", x1: left, y1: py(0), x2: left, y2: py(yMax) }, svg);
}

// ---- the token form and the status line ----

function showTokenForm() {
  document.getElementById("token-form").hidden = false;
  document.getElementById("token-input").focus();
}

document.getElementById("token-form").addEventListener("submit", event => {
  event.preventDefault();
  const token = document.getElementById("token-input").value.trim();
  if (!token) return;
  state.token = token;
  sessionStorage.setItem("weir-token", token);
  document.getElementById("token-form").hidden = true;
  poll();
});

// A `#token=...` pasted into the address bar of the open page.
window.addEventListener("hashchange", () => {
  const token = takeToken();
  if (token && token !== state.token) {
    state.token = token;
    document.getElementById("token-form").hidden = true;
    poll();
  }
});

function setStatus(status, message) {
  const el = document.getElementById("poll-status");
  el.dataset.status = status;
  el.textContent = message;
}

// ---- small helpers ----

function svgEl(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function text(parent, x, y, content, cls) {
  const t = svgEl("text", { x, y }, parent);
  if (cls) t.setAttribute("class", cls);
  t.textContent = content;
  return t;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function row(body, values) {
  const tr = body.insertRow();
  for (const v of values) cell(tr, v);
  return tr;
}

function emptyRow(body, message, columns) {
  const tr = body.insertRow();
  tr.className = "empty-row";
  cell(tr, message).colSpan = columns;
}

function cell(tr, value) {
  const td = tr.insertCell();
  td.textContent = String(value);
  return td;
}

function shorten(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }
function millis(ms) { return ms === undefined ? "—" : `${ms < 10 ? ms.toFixed(2) : ms.toFixed(0)} ms`; }
function percent(r) { return `${Math.round(r * 100)}%`; }
function clock(ms) { return ms > 0 ? new Date(ms).toLocaleTimeString([], { hour12: false }) : "—"; }

function watermark(value) {
  if (value === NO_WATERMARK) return "none yet";
  const ms = Number(value);
  return ms > 1e11 && ms < 1e14 ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : value;
}

function duration(ms) {
  if (ms >= 9e15) return "never";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  return s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m`;
}

function count(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(0) + "k";
  return String(Math.round(n));
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

/** The smallest 1, 2 or 5 times a power of ten at or above `v`. */
function niceCeiling(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  return [1, 2, 5, 10].map(m => m * p).find(c => c >= v);
}

poll();
