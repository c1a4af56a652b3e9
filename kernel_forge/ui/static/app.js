// Kernel Forge inspection UI: a single page with hash routes, no dependencies.
// Every string from the server is untrusted (kernel sources, errors, logs): the DOM is built with
// createElement + textContent only, never innerHTML with data.
"use strict";

const STATUS_COLORS = {
  verified: "#1f9d55", slower: "#9aa5b1", flagged: "#d69e2e",
  wrong: "#d64545", untouched: "#d64545", input_written: "#d64545", oob: "#d64545",
  compile_error: "#805ad5", load_error: "#805ad5", crash: "#1a1a1a", timeout: "#1a1a1a",
};
const STATUS_GROUPS = [
  ["verified", ["verified"]], ["slower", ["slower"]], ["flagged", ["flagged"]],
  ["wrong / untouched / input written / oob", ["wrong", "untouched", "input_written", "oob"]],
  ["compile / load error", ["compile_error", "load_error"]], ["crash / timeout", ["crash", "timeout"]],
];
const FAILED = new Set(["wrong", "untouched", "input_written", "oob", "compile_error", "load_error",
  "crash", "timeout"]);
const colorOf = (s) => STATUS_COLORS[s] || "#4a5568";

// ---- small helpers
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = String(v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}
const num = (v) => typeof v === "number" && isFinite(v);
const fmtUs = (v) => (num(v) && v >= 0 ? (v >= 1000 ? (v / 1000).toFixed(2) + " ms" : v.toFixed(v < 10 ? 2 : 1) + " us") : "-");
const fmtX = (v) => (num(v) ? v.toFixed(2) + "x" : "-");
const fmtPct = (v) => (num(v) ? (100 * v).toFixed(1) + "%" : "-");
const badge = (s) => el("span", { class: "badge st-" + String(s || "").replace(/[^a-z_]/g, ""), text: s || "-" });
const enc = encodeURIComponent;

async function api(path, opts) {
  const r = await fetch(path, opts);
  const ct = r.headers.get("Content-Type") || "";
  const body = ct.startsWith("application/json") ? await r.json() : await r.blob();
  if (!r.ok) throw new Error((body && body.error) || r.statusText);
  return body;
}
// actions carry the server's token, which it wrote into this page (server.py: DNS rebinding)
const UI_TOKEN = (document.querySelector('meta[name="kforge-token"]') || {}).content || "";
const post = (path) => api(path, { method: "POST", headers: { "X-KForge-Token": UI_TOKEN } });

let cleanup = [];  // timers and listeners of the current page
function setStatus(text) { document.getElementById("status").textContent = text; }
function page(...kids) {
  const main = document.getElementById("main");
  main.replaceChildren(...kids.filter((k) => k !== null && k !== undefined && k !== false));
  return main;
}
function showError(e) { page(el("div", { class: "error", text: String(e && e.message || e) })); }

// ---- a virtualized list: only the visible rows exist in the DOM
function vlist(columns, rows, onClick, height) {
  const H = 28;
  const box = el("div", { class: "vlist", style: height ? `height:${height}` : null });
  const head = el("div", { class: "row head" },
    columns.map((c) => el("div", { class: "cell" + (c.num ? " num" : ""), style: `width:${c.w}px`, text: c.title })));
  const spacer = el("div", { class: "spacer" });
  box.append(head, spacer);
  let data = rows;
  function render() {
    spacer.style.height = data.length * H + "px";
    const first = Math.max(0, Math.floor(box.scrollTop / H) - 5);
    const last = Math.min(data.length, first + Math.ceil((box.clientHeight || 600) / H) + 10);
    const out = [];
    for (let i = first; i < last; i++) {
      const r = data[i];
      const row = el("div", { class: "row", style: `top:${i * H}px`, "data-index": i },
        columns.map((c) => {
          const v = c.get(r);
          return el("div", { class: "cell" + (c.num ? " num" : ""), style: `width:${c.w}px`,
            title: typeof v === "string" ? v : null }, v instanceof Node ? v : String(v ?? "-"));
        }));
      if (onClick) row.addEventListener("click", (ev) => { if (ev.target.tagName !== "BUTTON") onClick(r); });
      out.push(row);
    }
    spacer.replaceChildren(...out);
  }
  box.addEventListener("scroll", () => requestAnimationFrame(render));
  box.update = (newRows) => { data = newRows; render(); };
  requestAnimationFrame(render);
  setTimeout(render, 0);
  return box;
}

// ---- C / CUDA highlighting (tokens become spans with textContent)
const KW = new Set(("if else for while do return break continue switch case default goto sizeof typedef struct union " +
  "enum static inline const volatile extern register restrict __restrict__ __global__ __device__ __host__ " +
  "__shared__ __forceinline__ __launch_bounds__ template typename namespace using extern").split(" "));
const TY = new Set(("void char short int long float double signed unsigned bool _Bool size_t int8_t int16_t " +
  "int32_t int64_t uint8_t uint16_t uint32_t uint64_t half __half __nv_bfloat16 float2 float4 int4 dim3").split(" "));
const TOKEN = /(\/\*[\s\S]*?(?:\*\/|$)|\/\/[^\n]*)|("(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)|(^[ \t]*#[^\n]*)|(\b(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?)[uUlLfF]*\b)|([A-Za-z_]\w*)/gm;
function highlight(src) {
  const pre = el("pre", { class: "code" });
  let line = el("span", { class: "ln" });
  const lines = [line];
  function put(text, cls) {
    const parts = text.split("\n");
    parts.forEach((p, i) => {
      if (i > 0) { line = el("span", { class: "ln" }); lines.push(line); }
      if (p) line.appendChild(cls ? el("span", { class: cls, text: p }) : document.createTextNode(p));
    });
  }
  let last = 0;
  for (const m of src.matchAll(TOKEN)) {
    if (m.index > last) put(src.slice(last, m.index));
    let cls = null;
    if (m[1]) cls = "tk-com"; else if (m[2]) cls = "tk-str"; else if (m[3]) cls = "tk-pp";
    else if (m[4]) cls = "tk-num"; else if (m[5]) cls = KW.has(m[5]) ? "tk-kw" : TY.has(m[5]) ? "tk-ty" : null;
    put(m[0], cls);
    last = m.index + m[0].length;
  }
  if (last < src.length) put(src.slice(last));
  for (const l of lines) l.appendChild(document.createTextNode("\n"));
  pre.append(...lines);
  return pre;
}

function kv(pairs) {
  const dl = el("dl", { class: "kv" });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(el("dt", { text: k }), el("dd", {}, v instanceof Node ? v : String(v ?? "-")));
  }
  return dl;
}

// ---- canvas helpers
function fitCanvas(cv) {
  const r = window.devicePixelRatio || 1;
  const w = cv.clientWidth, h = cv.clientHeight;
  cv.width = Math.max(1, Math.round(w * r)); cv.height = Math.max(1, Math.round(h * r));
  const ctx = cv.getContext("2d");
  ctx.setTransform(r, 0, 0, r, 0, 0);
  return { ctx, w, h };
}

function barChart(cv, items) {  // items: [{label, value}] speedups; 1x is the axis
  const { ctx, w, h } = fitCanvas(cv);
  ctx.font = "12px system-ui, sans-serif";
  if (!items.length) { ctx.fillStyle = "#6b7280"; ctx.fillText("no speedups to show", 10, 20); return; }
  const rowH = Math.min(26, (h - 20) / items.length);
  const labelW = Math.min(360, w * 0.45);
  const maxV = Math.max(2, ...items.map((i) => i.value));
  const x1 = labelW + 10, span = w - x1 - 60;
  const xOf = (v) => x1 + (Math.log(v) / Math.log(maxV)) * span * 0.5 + span * 0.5;
  ctx.strokeStyle = "#9aa5b1"; ctx.beginPath(); ctx.moveTo(xOf(1), 0); ctx.lineTo(xOf(1), h); ctx.stroke();
  items.forEach((it, i) => {
    const y = 10 + i * rowH;
    ctx.fillStyle = "#1d2330";
    ctx.fillText(it.label.length > 55 ? it.label.slice(0, 52) + "..." : it.label, 4, y + rowH * 0.65);
    const a = xOf(1), b = xOf(Math.max(it.value, 1 / maxV));
    ctx.fillStyle = it.value >= 1 ? "#1f9d55" : "#d64545";
    ctx.fillRect(Math.min(a, b), y + 3, Math.abs(b - a), rowH - 6);
    ctx.fillStyle = "#1d2330";
    ctx.fillText(fmtX(it.value), Math.max(a, b) + 4, y + rowH * 0.65);
  });
}

// ---- Overview
async function viewOverview() {
  const o = await api("/api/overview");
  const rows = o.rows || [];
  const served = rows.filter((r) => r.why === "served" || r.why.startsWith("served ("));
  const cards = el("div", { class: "cards" },
    el("div", { class: "card" }, el("div", { class: "v", text: rows.length }), el("div", { class: "k", text: "hot signatures (" + o.rows_source + ")" })),
    el("div", { class: "card" }, el("div", { class: "v", text: served.length }), el("div", { class: "k", text: "served by a forged kernel" })),
    el("div", { class: "card" }, el("div", { class: "v", text: o.cache.entries }), el("div", { class: "k", text: `cache entries (${o.cache.disabled} disabled)` })),
    el("div", { class: "card", id: "saving" },
      el("div", { class: "v", text: o.saving && num(o.saving.speedup) ? fmtX(o.saving.speedup) : "-" }),
      el("div", { class: "k", text: o.saving ? `estimated end-to-end (Amdahl, ${fmtPct(o.saving.covered_share)} of recorded time covered)` : "end-to-end estimate needs a run file (--stats)" })));
  const table = el("table", { id: "overview-table" },
    el("tr", {}, ["op", "signature", "share", "eager", "forged", "speedup", "status", "served / why", "job"].map((t, i) =>
      el("th", { class: [2, 3, 4, 5].includes(i) ? "num" : null, text: t }))),
    rows.slice(0, 500).map((r) => el("tr", {},
      el("td", { text: r.op }), el("td", { text: r.signature, title: r.signature }),
      el("td", { class: "num", text: fmtPct(r.share) }), el("td", { class: "num", text: fmtUs(r.entry_eager_us ?? r.eager_us) }),
      el("td", { class: "num", text: fmtUs(r.forged_us ?? r.best_us) }),
      el("td", { class: "num", text: fmtX(r.entry_speedup ?? r.speedup) }),
      el("td", {}, badge(r.status)), el("td", { text: r.why }),
      el("td", {}, r.job_id ? el("a", { href: "#/job/" + enc(r.job_id), text: "search" }) : "-"))));
  const chart = el("canvas", { id: "speedups", style: "width:100%;height:" + Math.max(80, Math.min(rows.length, 30) * 26 + 20) + "px" });
  const t = o.tuner;
  const tunerLine = t ? el("div", { id: "tuner", class: "muted", text:
    `online tuner (pid ${t.pid}${t.age_s > 60 ? ", last update " + Math.round(t.age_s) + " s ago" : ""}): ${t.phase}` +
    (t.current ? ` ${t.current_pass} pass on ${t.current}` : "") +
    ` · ${t.queue} queued · ${t.landed} landed` + (num(t.first_landed_s) ? ` (first ${t.first_landed_s.toFixed(1)} s after it was hot)` : "") +
    ` · ${t.refused} refused` + (t.last_refusal ? ` (last: ${t.last_refusal})` : "") +
    (t.last_check ? ` · model check: ${{ all: "every kernel kept", ops: "chain kernels off", none: "nothing served" }[t.last_check]}` : "") +
    (num(t.worker_busy_s) ? ` · worker busy ${t.worker_busy_s.toFixed(1)} s of ${num(t.elapsed_s) ? t.elapsed_s.toFixed(0) : "?"} s (duty ${fmtPct(t.duty)})` : "") }) : null;
  page(el("h1", { text: "Overview" }),
    el("div", { class: "muted", text: `cache ${o.cache_dir} · jobs ${o.jobs_dir}` + (o.stats_file ? ` · run ${o.stats_file}` : "") }),
    tunerLine,
    o.rows_error ? el("div", { class: "error", text: o.rows_error }) : null,
    cards, el("h2", { text: "Hot signatures" }), table,
    rows.length > 500 ? el("div", { class: "muted", text: `${rows.length - 500} more rows not shown` }) : null,
    el("h2", { text: "Speedup per signature (log scale, 1x = eager)" }), chart);
  const items = rows.map((r) => ({ label: r.signature || r.op || "?", value: r.entry_speedup ?? r.speedup }))
    .filter((i) => num(i.value) && i.value > 0).slice(0, 30);
  barChart(chart, items);
}

// ---- Jobs
async function viewJobs() {
  const jobs = await api("/api/jobs");
  const cols = [
    { title: "started", w: 170, get: (j) => new Date(j.mtime * 1000).toLocaleString() },
    { title: "op", w: 190, get: (j) => j.op },
    { title: "signature", w: 420, get: (j) => j.signature },
    { title: "state", w: 110, get: (j) => badge(j.state === "done" ? j.status : j.state) },
    { title: "eager", w: 90, num: true, get: (j) => fmtUs(j.eager_us) },
    { title: "best", w: 90, num: true, get: (j) => fmtUs(j.best_us) },
    { title: "speedup", w: 80, num: true, get: (j) => fmtX(j.speedup) },
    { title: "iters", w: 60, num: true, get: (j) => j.iterations ?? "-" },
  ];
  const list = vlist(cols, jobs, (j) => { location.hash = "#/job/" + enc(j.id); });
  list.id = "jobs-list";
  page(el("h1", { text: "Jobs" }), el("div", { class: "muted", text: `${jobs.length} job folders` }), list);
  if (jobs.some((j) => j.state === "running")) {
    const t = setInterval(async () => { try { list.update(await api("/api/jobs")); } catch (e) { setStatus(String(e)); } }, 2000);
    cleanup.push(() => clearInterval(t));
  }
}

// ---- the search tree on a canvas: layout once per tree, cull when drawing
function layoutTree(nodes) {
  // nodes: [id, parent, status, latency, change, depth]
  const byId = new Map(), kids = new Map(), roots = [];
  for (const n of nodes) byId.set(n[0], { id: n[0], parent: n[1], status: n[2], lat: n[3], change: n[4], depth: 0, x: 0, y: 0 });
  for (const n of byId.values()) {
    if (byId.has(n.parent)) { if (!kids.has(n.parent)) kids.set(n.parent, []); kids.get(n.parent).push(n.id); }
    else roots.push(n.id);
  }
  let leaf = 0;
  const stack = roots.slice().reverse().map((id) => [id, 0, false]);
  while (stack.length) {  // iterative post-order: a chain of 10,000 nodes must not overflow
    const top = stack.pop();
    const [id, depth, done] = top;
    const n = byId.get(id);
    const ch = kids.get(id) || [];
    if (!done) {
      n.depth = depth;
      stack.push([id, depth, true]);
      for (let i = ch.length - 1; i >= 0; i--) stack.push([ch[i], depth + 1, false]);
      continue;
    }
    n.x = ch.length ? (byId.get(ch[0]).x + byId.get(ch[ch.length - 1]).x) / 2 : leaf++ * 22;
    n.y = depth * 60;
  }
  return { byId, list: [...byId.values()] };
}

function treeView(cv, getLayout, job, onPick) {
  const view = { s: 1, tx: 40, ty: 30 };
  let fitted = false;
  const eager = job.tree.eager_us || job.job.eager_us;
  const radius = (n) => {
    if (!num(n.lat) || !num(eager) || n.lat <= 0) return 5;
    return Math.max(4, Math.min(12, 7 + 2.5 * Math.log2(eager / n.lat)));
  };
  function fit() {
    const L = getLayout();
    if (!L.list.length) return;
    let minX = Infinity, maxX = -Infinity, maxY = 0;
    for (const n of L.list) { minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x); maxY = Math.max(maxY, n.y); }
    const w = cv.clientWidth - 80, h = cv.clientHeight - 60;
    view.s = Math.min(2, w / Math.max(1, maxX - minX), h / Math.max(1, maxY));
    view.tx = 40 - minX * view.s + Math.max(0, (w - (maxX - minX) * view.s) / 2);
    view.ty = 30;
    fitted = true;
  }
  function draw() {
    const L = getLayout();
    if (!fitted) fit();
    const { ctx, w, h } = fitCanvas(cv);
    ctx.clearRect(0, 0, w, h);
    const sx = (x) => x * view.s + view.tx, sy = (y) => y * view.s + view.ty;
    const vis = (n) => { const x = sx(n.x), y = sy(n.y); return x > -20 && x < w + 20 && y > -20 && y < h + 20; };
    ctx.strokeStyle = "#cbd2dc"; ctx.lineWidth = 1; ctx.beginPath();
    for (const n of L.list) {
      const p = L.byId.get(n.parent);
      if (!p || (!vis(n) && !vis(p))) continue;
      ctx.moveTo(sx(p.x), sy(p.y)); ctx.lineTo(sx(n.x), sy(n.y));
    }
    ctx.stroke();
    const labels = view.s > 0.6;
    ctx.font = "10px system-ui, sans-serif"; ctx.textAlign = "center";
    for (const n of L.list) {
      if (!vis(n)) continue;
      const r = Math.max(1.5, radius(n) * Math.min(1, view.s));
      ctx.fillStyle = colorOf(n.status);
      ctx.beginPath(); ctx.arc(sx(n.x), sy(n.y), r, 0, 2 * Math.PI); ctx.fill();
      if (n.id === view.selected) { ctx.strokeStyle = "#2f6fde"; ctx.lineWidth = 2; ctx.stroke(); ctx.lineWidth = 1; }
      if (labels && num(n.lat)) { ctx.fillStyle = "#1d2330"; ctx.fillText(fmtUs(n.lat), sx(n.x), sy(n.y) + r + 11); }
    }
  }
  let raf = 0;
  const redraw = () => { if (!raf) raf = requestAnimationFrame(() => { raf = 0; draw(); }); };
  function pick(px, py) {
    const L = getLayout();
    let best = null, bd = Infinity;
    for (const n of L.list) {
      const dx = n.x * view.s + view.tx - px, dy = n.y * view.s + view.ty - py, d = dx * dx + dy * dy;
      if (d < bd) { bd = d; best = n; }
    }
    return best && bd <= Math.pow(Math.max(8, radius(best) * Math.min(1, view.s) + 4), 2) ? best : null;
  }
  let drag = null;
  cv.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, tx: view.tx, ty: view.ty, moved: false }; });
  window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });
  cv.addEventListener("mousemove", (e) => {
    const b = cv.getBoundingClientRect();
    if (drag && (e.buttons & 1)) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      view.tx = drag.tx + dx; view.ty = drag.ty + dy; redraw();
      return;
    }
    const n = pick(e.clientX - b.left, e.clientY - b.top);
    cv.title = n ? `node ${n.id}: ${n.status} ${fmtUs(n.lat)}\n${n.change || ""}` : "";
  });
  cv.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    const b = cv.getBoundingClientRect();
    const n = pick(e.clientX - b.left, e.clientY - b.top);
    if (n) onPick(n);
  });
  cv.addEventListener("wheel", (e) => {
    e.preventDefault();
    const b = cv.getBoundingClientRect(), px = e.clientX - b.left, py = e.clientY - b.top;
    const f = Math.exp(-e.deltaY * 0.0015);
    view.tx = px - (px - view.tx) * f; view.ty = py - (py - view.ty) * f; view.s *= f; redraw();
  }, { passive: false });
  window.addEventListener("resize", redraw);
  cleanup.push(() => window.removeEventListener("resize", redraw));
  redraw();
  return {
    redraw, fit: () => { fit(); redraw(); },
    // where a node is on screen, in CSS pixels relative to the canvas (tests click there)
    screenPos: (id) => { const n = getLayout().byId.get(id); return n ? { x: n.x * view.s + view.tx, y: n.y * view.s + view.ty } : null; },
    select: (id) => { view.selected = id; redraw(); },
  };
}

function progressChart(cv, progress, eager, roofline) {
  const { ctx, w, h } = fitCanvas(cv);
  ctx.clearRect(0, 0, w, h);
  const pts = progress.filter((p) => p.event === "node" && num(p.iteration));
  const L = 60, R = 60, T = 14, B = 28;
  ctx.font = "11px system-ui, sans-serif";
  if (!pts.length) { ctx.fillStyle = "#6b7280"; ctx.fillText("no iterations yet", 10, 20); return; }
  const vals = pts.flatMap((p) => [p.latency_us, p.best_us]).concat([eager, roofline]).filter((v) => num(v) && v > 0);
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (hi <= lo) { hi = lo * 2; lo = lo / 2; }
  const lgLo = Math.log(lo) - 0.1, lgHi = Math.log(hi) + 0.1;
  const maxIt = Math.max(...pts.map((p) => p.iteration), 2);
  const maxCost = Math.max(...pts.map((p) => p.elapsed_s || 0), 1e-9);
  const X = (i) => L + ((i - 1) / Math.max(1, maxIt - 1)) * (w - L - R);
  const Y = (v) => T + (1 - (Math.log(v) - lgLo) / (lgHi - lgLo)) * (h - T - B);
  const YC = (c) => T + (1 - c / maxCost) * (h - T - B);
  ctx.strokeStyle = "#e3e5ea"; ctx.strokeRect(L, T, w - L - R, h - T - B);
  ctx.fillStyle = "#6b7280"; ctx.textAlign = "right";
  for (let k = 0; k <= 4; k++) { const v = Math.exp(lgLo + (k / 4) * (lgHi - lgLo)); ctx.fillText(fmtUs(v), L - 4, Y(v) + 4); }
  ctx.textAlign = "left"; ctx.fillText(maxCost.toFixed(1) + " s", w - R + 4, T + 8); ctx.fillText("0 s", w - R + 4, h - B);
  ctx.textAlign = "center"; ctx.fillText("iteration", (L + w - R) / 2, h - 6);
  ctx.fillText("1", X(1), h - B + 12); ctx.fillText(String(maxIt), X(maxIt), h - B + 12);
  const hline = (v, color, label) => {
    if (!num(v) || v <= 0) return;
    ctx.strokeStyle = color; ctx.setLineDash([6, 4]); ctx.beginPath(); ctx.moveTo(L, Y(v)); ctx.lineTo(w - R, Y(v)); ctx.stroke();
    ctx.setLineDash([]); ctx.fillStyle = color; ctx.textAlign = "left"; ctx.fillText(label, L + 4, Y(v) - 3);
  };
  hline(eager, "#d64545", "eager " + fmtUs(eager));
  hline(roofline, "#1f9d55", "roofline " + fmtUs(roofline));
  ctx.strokeStyle = "#b0b6c0"; ctx.beginPath();  // cumulative cost (wall seconds)
  pts.forEach((p, i) => { const x = X(p.iteration), y = YC(p.elapsed_s || 0); if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y); });
  ctx.stroke();
  for (const p of pts) if (num(p.latency_us) && p.latency_us > 0) {
    ctx.fillStyle = colorOf(p.status); ctx.beginPath(); ctx.arc(X(p.iteration), Y(p.latency_us), 3, 0, 2 * Math.PI); ctx.fill();
  }
  ctx.strokeStyle = "#2f6fde"; ctx.lineWidth = 2; ctx.beginPath();  // best so far, as steps
  let started = false, prevY = 0;
  for (const p of pts) {
    if (!num(p.best_us) || p.best_us <= 0) continue;
    const x = X(p.iteration), y = Y(p.best_us);
    if (!started) { ctx.moveTo(x, y); started = true; } else { ctx.lineTo(x, prevY); ctx.lineTo(x, y); }
    prevY = y;
  }
  ctx.stroke(); ctx.lineWidth = 1;
}

function legend() {
  return el("div", { class: "legend" }, STATUS_GROUPS.map(([label, sts]) =>
    el("span", { style: "--c:" + colorOf(sts[0]), text: label })));
}

async function viewJob(id) {
  let job = await api("/api/job/" + enc(id));
  let layout = layoutTree(job.nodes);
  const res = job.result || {};
  const cv = el("canvas", { id: "tree" });
  const pc = el("canvas", { id: "progress" });
  const stateBadge = el("span", {}, badge(job.state === "done" ? res.status : job.state));
  const summary = el("div", { id: "job-summary" });
  const counts = () => {
    const c = {};
    for (const n of layout.list) c[n.status] = (c[n.status] || 0) + 1;
    return Object.entries(c).map(([k, v]) => `${k} ${v}`).join(", ");
  };
  function fillSummary() {
    const r = job.result || {};
    summary.replaceChildren(kv([
      ["op", job.job.op], ["signature", job.job.signature], ["backend", job.job.backend],
      ["arch", job.tree.arch], ["eager", fmtUs(job.tree.eager_us ?? job.job.eager_us)],
      ["roofline", fmtUs(job.tree.roofline_us)], ["best", fmtUs(r.best_us)], ["speedup", fmtX(r.speedup)],
      ["result", r.detail], ["stop", r.stop_reason], ["cache key", r.cache_key],
      ["nodes", `${layout.list.length} (${counts()})`], ["proposer", job.tree.proposer],
    ]));
  }
  fillSummary();
  page(el("h1", {}, "Search ", el("span", { class: "muted", text: id }), " ", stateBadge),
    el("div", { class: "split" }, el("div", {}, summary),
      el("div", {}, el("h2", { text: "Best latency vs iteration" }), pc,
        el("div", { class: "muted", text: "dots: each candidate; blue: best so far; grey: cumulative wall time (right axis)" }))),
    el("h2", { text: "Search tree" }),
    el("div", { class: "toolbar" }, legend(), el("button", { id: "fit", text: "fit", onclick: () => tv.fit() }),
      el("span", { class: "muted", text: "drag to pan, wheel to zoom, click a node to open it" })),
    cv);
  const tv = treeView(cv, () => layout, job, (n) => { location.hash = `#/job/${enc(id)}/c/${n.id}`; });
  window.kfTree = tv;
  const drawProgress = () => progressChart(pc, job.progress, job.tree.eager_us ?? job.job.eager_us, job.tree.roofline_us);
  drawProgress();
  window.addEventListener("resize", drawProgress);
  cleanup.push(() => window.removeEventListener("resize", drawProgress));
  if (job.state === "running") {  // live: new progress lines every 1.5 s, the tree when it grew
    setStatus("live");
    const t = setInterval(async () => {
      try {
        const live = await api(`/api/job/${enc(id)}/live?since=${job.progress.length}`);
        if (live.progress.length || live.result) {
          job = await api("/api/job/" + enc(id));
          layout = layoutTree(job.nodes);
          fillSummary(); drawProgress(); tv.redraw();
        }
        if (live.state !== "running") {
          clearInterval(t); setStatus("");
          stateBadge.replaceChildren(badge(live.result ? live.result.status : live.state));
        }
      } catch (e) { setStatus(String(e)); }
    }, 1500);
    cleanup.push(() => { clearInterval(t); setStatus(""); });
  }
}

// ---- Candidate
function diffView(lines) {
  const pre = el("pre", { class: "code diff", id: "diff" });
  for (const l of lines) {
    const cls = l.startsWith("@@") ? "hunk" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "ctx";
    pre.appendChild(el("span", { class: cls, text: l + "\n" }));
  }
  return pre;
}

async function viewCandidate(id, nid) {
  const c = await api(`/api/job/${enc(id)}/candidate/${enc(nid)}`);
  const n = c.node || {};
  const failed = FAILED.has(n.status) || (n.error && n.status !== "verified");
  const link = (i) => el("a", { href: `#/job/${enc(id)}/c/${i}`, text: String(i) });
  const known = new Set(["id", "parent", "status", "latency_us", "speedup", "error", "proposer", "origin", "change",
    "meta", "source_file", "launch_file", "log_file", "max_abs_err", "max_rel_err", "failed_case", "compile_s",
    "eval_s", "elapsed_s"]);
  const extra = Object.entries(n).filter(([k]) => !known.has(k))
    .map(([k, v]) => [k, typeof v === "object" && v !== null ? JSON.stringify(v) : v]);
  page(
    el("h1", {}, `Candidate ${n.id} `, badge(n.status), " ",
      el("a", { href: "#/job/" + enc(id), class: "muted", text: "back to the search" })),
    el("div", { class: "muted", text: `${c.op || ""} ${c.signature || ""}` }),
    failed && n.error ? el("div", { class: "error", id: "cand-error", text: n.error }) : null,
    el("div", { class: "split" },
      el("div", {}, el("h2", { text: "Result" }), kv([
        ["status", n.status], ["latency", fmtUs(n.latency_us)], ["speedup vs eager", fmtX(n.speedup)],
        ["eager / roofline", `${fmtUs(c.eager_us)} / ${fmtUs(c.roofline_us)}`],
        ["max abs / rel error", `${n.max_abs_err ?? "-"} / ${n.max_rel_err ?? "-"}`],
        ["failed case", n.failed_case === -1 ? "none" : n.failed_case],
        ["compile / eval / total", `${num(n.compile_s) ? n.compile_s.toFixed(3) : "-"} s / ${num(n.eval_s) ? n.eval_s.toFixed(3) : "-"} s / ${num(n.elapsed_s) ? n.elapsed_s.toFixed(3) : "-"} s`],
        ["message", !failed ? n.error : undefined],
      ])),
      el("div", {}, el("h2", { text: "Proposal" }), kv([
        ["proposer", n.proposer], ["change", el("span", { id: "cand-change", text: n.change ?? "-" })],
        ["origin", n.origin], ["template", n.meta && n.meta.template],
        ["knobs", n.meta && n.meta.knobs ? JSON.stringify(n.meta.knobs) : undefined],
        ["parent", num(n.parent) && n.parent >= 0 ? link(n.parent) : "root"],
        ["children", c.children && c.children.length ? el("span", {}, c.children.flatMap((k, i) => (i ? [", ", link(k)] : [link(k)]))) : "none"],
        ...extra,
      ]))),
    el("h2", { text: "Diff against the parent" }),
    c.parent_source ? (c.diff.length ? diffView(c.diff) : el("div", { class: "muted", id: "diff", text: "identical source" }))
      : el("div", { class: "muted", id: "diff", text: "a root: no parent to compare with" }),
    el("h2", { text: `Source (${c.lang || "?"})` }),
    c.source !== null ? Object.assign(highlight(c.source), { id: "source" }) : el("div", { class: "muted", text: "no source file" }),
    el("h2", { text: "Launch record" }),
    el("pre", { class: "plain", id: "launch", text: c.launch ? JSON.stringify(c.launch, null, 1) : "(none)" }),
    el("h2", { text: "Compile log" }),
    el("pre", { class: "plain", id: "log", text: c.log ? c.log : "(empty)" }));
}

// ---- Cache
async function viewCache() {
  const c = await api("/api/cache");
  let entries = c.entries;
  const speed = (e) => (num(e.kernel_us) && e.kernel_us > 0 && num(e.eager_us) ? e.eager_us / e.kernel_us : null);
  const act = (e, action) => async () => {
    if (action === "delete" && !confirm(`Delete cache entry ${e.key}?`)) return;
    try { await post(`/api/cache/${enc(e.key)}/${action}`); setStatus(`${action}: ${e.key}`); await reload(); }
    catch (err) { setStatus(String(err.message || err)); }
  };
  const cols = [
    { title: "key", w: 150, get: (e) => e.key },
    { title: "op", w: 180, get: (e) => e.op },
    { title: "signature", w: 380, get: (e) => e.signature },
    { title: "backend/arch", w: 200, get: (e) => `${e.backend}/${e.arch}` },
    { title: "eager", w: 80, num: true, get: (e) => fmtUs(e.eager_us) },
    { title: "kernel", w: 80, num: true, get: (e) => fmtUs(e.kernel_us) },
    { title: "speedup", w: 70, num: true, get: (e) => fmtX(speed(e)) },
    { title: "origin", w: 130, get: (e) => el("span", { class: "origin", title: e.origin_detail || "", text: `${e.origin || "local"} · ${e.proposer || "-"}` }) },
    { title: "state", w: 180, get: (e) => (e.disabled ? el("span", { title: e.disabled_reason || "" }, badge("disabled"), " ", e.disabled_reason || "") : badge("ok")) },
    { title: "", w: 170, get: (e) => el("span", {},
      el("button", { class: "act-toggle", text: e.disabled ? "enable" : "disable", onclick: act(e, e.disabled ? "enable" : "disable") }), " ",
      el("button", { class: "danger act-delete", text: "delete", onclick: act(e, "delete") })) },
  ];
  const filter = el("input", { type: "search", placeholder: "filter by op, signature, arch, key" });
  const count = el("span", { class: "muted" });
  const list = vlist(cols, entries, null);
  list.id = "cache-list";
  function apply() {
    const q = filter.value.toLowerCase();
    const shown = entries.filter((e) => !q || [e.key, e.op, e.signature, e.arch, e.backend].join(" ").toLowerCase().includes(q))
      .sort((a, b) => String(a.op).localeCompare(String(b.op)) || String(a.signature).localeCompare(String(b.signature)));
    count.textContent = `${shown.length} of ${entries.length} entries in ${c.dir}`;
    list.update(shown);
  }
  async function reload() { entries = (await api("/api/cache")).entries; apply(); }
  filter.addEventListener("input", apply);
  const exportBtn = el("button", { id: "export", text: "export bundle", onclick: async () => {
    try {
      const blob = await post("/api/cache/export");
      const a = el("a", { href: URL.createObjectURL(blob), download: "kforge-cache.kfbundle" });
      document.body.appendChild(a); a.click(); a.remove();
      setStatus(`exported ${blob.size} bytes`);
    } catch (e) { setStatus(String(e.message || e)); }
  } });
  page(el("h1", { text: "Cache" }), el("div", { class: "toolbar" }, filter, exportBtn, count), list);
  apply();
}

// ---- router
async function route() {
  for (const f of cleanup) f();
  cleanup = [];
  window.kfTree = null;
  const h = location.hash.replace(/^#/, "") || "/";
  const parts = h.split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("header nav a")) a.classList.remove("active");
  const nav = (id) => document.getElementById(id).classList.add("active");
  document.body.dataset.ready = "0";
  try {
    if (parts.length === 0) { nav("nav-overview"); await viewOverview(); }
    else if (parts[0] === "jobs") { nav("nav-jobs"); await viewJobs(); }
    else if (parts[0] === "cache") { nav("nav-cache"); await viewCache(); }
    else if (parts[0] === "job" && parts.length === 2) { nav("nav-jobs"); await viewJob(parts[1]); }
    else if (parts[0] === "job" && parts.length === 4 && parts[2] === "c") { nav("nav-jobs"); await viewCandidate(parts[1], parts[3]); }
    else page(el("div", { class: "error", text: "no such page" }));
  } catch (e) { showError(e); }
  document.body.dataset.ready = "1";  // tests wait for this
  document.body.dataset.route = h;
}
window.addEventListener("hashchange", route);
route();
