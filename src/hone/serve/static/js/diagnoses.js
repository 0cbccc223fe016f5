// Diagnoses: the list of saved `hone diagnose` runs and one diagnosis: the verdict, suggested
// knobs, hot threads, the flame graph (on-CPU, off-CPU, differential against another run),
// top-down and bottom-up tables by function and module, locks, top-down (TMAM) or its fallback.
// A whole-machine run (`--system`) shows the CPU split, the busiest process with the command that
// drills into it, and the process table in place of the per-process threads, off-CPU and locks.
import { get, getText, token } from "./api.js";
import { DataTable } from "./table.js";
import { clear, h, message, num, ready, when } from "./util.js";

const path = (name, tail = "") => `/api/diagnoses/${encodeURIComponent(name)}${tail}`;
const share = (x) => (x === null || x === undefined ? "" : `${(100 * x).toFixed(1)} %`);

// The HTML report: opened directly where reads are open; where they need the token (which a plain
// link cannot send) it is fetched with the token and saved as a file, never opened in this origin.
function reportLink(name) {
  const download = async (event) => {
    if (!token()) return;
    event.preventDefault();
    const blob = new Blob([await getText(path(name, "/report"))], { type: "text/html" });
    const a = h("a", { href: URL.createObjectURL(blob), download: `${name}.html` });
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };
  return h("a", { href: path(name, "/report"), target: "_blank", rel: "noopener", onclick: download }, "HTML report");
}

export async function page(main) {
  clear(main);
  main.append(
    h("h1", {}, "Diagnoses"),
    h("p", { class: "hint" }, "Saved runs of ", h("code", {}, "hone diagnose --pid PID"), ", ", h("code", {}, "hone diagnose -- COMMAND"), " or ", h("code", {}, "hone diagnose --system"), ", newest first."),
  );
  const box = h("div", { id: "diagnoses" });
  main.append(box);
  const rows = await get("/api/diagnoses");
  if (!rows.length) {
    message(box, "No diagnoses yet: run hone diagnose on this machine.");
    ready(main, "diagnoses");
    return;
  }
  new DataTable(box, [
    { key: "name", label: "diagnosis", value: (r) => r.name, node: (r) => h("a", { href: `#/diagnosis/${encodeURIComponent(r.name)}` }, r.name) },
    { key: "target", label: "target", value: (r) => r.target ?? "" },
    { key: "created", label: "when", value: (r) => r.created ?? 0, text: (r) => when(r.created) },
    { key: "window", label: "window s", value: (r) => r.window_s, text: (r) => num(r.window_s, 3), numeric: true },
    { key: "samples", label: "on-CPU samples", value: (r) => r.samples, numeric: true },
    { key: "finding", label: "verdict", value: (r) => r.finding?.headline ?? r.error ?? "" },
  ], { caption: "Click a diagnosis to open it" }).setRows(rows);
  ready(main, "diagnoses");
}

async function diagnosisPage(main, name) {
  clear(main);
  const d = await get(path(name));
  const others = (await get("/api/diagnoses")).filter((x) => x.name !== name && !x.error);
  const top = d.findings[0];
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/diagnoses" }, "Diagnoses"), " / ", name),
    h("h1", {}, `Diagnosis of ${d.target || name}`),
    h("p", { class: "hint" }, `${when(d.created)} · ${num(d.window_s, 3)} s window · ${d.samples} on-CPU samples (${d.event}${d.frequency_hz ? ` at ${d.frequency_hz} Hz` : ""}) · ${d.language} · ${d.cpus} CPUs · `, reportLink(name)),
    h("section", { class: "card", id: "verdict" },
      h("h2", {}, "Verdict"),
      top ? h("p", { class: "verdict" }, h("strong", {}, top.headline)) : h("p", {}, "No finding."),
      top && top.details.length ? h("ul", {}, top.details.map((x) => h("li", {}, x))) : null,
      d.findings.length > 1 ? h("p", { class: "hint" }, "Also:") : null,
      d.findings.length > 1 ? h("ul", {}, d.findings.slice(1).map((f) => h("li", {}, f.headline))) : null,
      h("p", {}, h("strong", {}, "On-CPU: "), d.summary),
    ),
  );
  // The whole machine's answer comes first, as the verdict names its busiest process.
  if (d.system) main.append(...systemCards(d.system));
  main.append(
    h("div", { class: "grid two" },
      h("section", { class: "card", id: "knobs" }, h("h2", {}, "What to tune"), knobList(d.suggestions)),
      h("section", { class: "card", id: "topdown" }, h("h2", {}, "Top-down"), topdownView(d.topdown)),
    ),
  );
  if (!d.system) main.append(threadsCard(d.threads));
  main.append(flameCard(name, d, others));
  main.append(h("div", { class: "grid two" }, tableCard("Functions", d.functions), tableCard("Modules", d.modules)));
  // Lock waits get the full width: their lock, site and thread names are as long as frames.
  // A whole-machine run records neither (they are per process: the drill-in command has them).
  if (!d.system) main.append(offcpuCard(d.offcpu), locksCard(d.locks));
  main.append(h("section", { class: "card", id: "capabilities" }, h("h2", {}, "What this machine offered"), capabilityList(d.capabilities)));
  if (d.notes.length) main.append(h("section", { class: "card" }, h("h2", {}, "Notes"), h("ul", {}, d.notes.map((n) => h("li", {}, n)))));
}

function threadsCard(threads) {
  const threadBox = h("div", { id: "threads" });
  new DataTable(threadBox, [
    { key: "tid", label: "tid", value: (t) => t.tid, numeric: true },
    { key: "name", label: "thread", value: (t) => t.name || t.comm },
    { key: "cpu", label: "on CPU", value: (t) => t.cpu_pct, text: (t) => num(t.cpu_pct, 3), numeric: true },
    { key: "user", label: "user", value: (t) => t.user_pct, text: (t) => num(t.user_pct, 3), numeric: true },
    { key: "sys", label: "system", value: (t) => t.sys_pct, text: (t) => num(t.sys_pct, 3), numeric: true },
    { key: "runq", label: "run queue", value: (t) => t.runq_pct, text: (t) => num(t.runq_pct, 3), numeric: true },
    { key: "io", label: "I/O wait", value: (t) => t.io_pct, text: (t) => num(t.io_pct, 3), numeric: true },
    { key: "sleep", label: "sleeping", value: (t) => t.sleep_pct, text: (t) => num(t.sleep_pct, 3), numeric: true },
    { key: "frames", label: "top frames", value: (t) => (t.frames || []).slice(0, 3).join(" ← "), wrap: true },
  ]).setRows(threads);
  return h("section", { class: "card" }, h("h2", {}, "Hot threads (% of one CPU over the window)"), threadBox);
}

// `--system`: the CPU split (/proc/stat, % of all CPUs' time) beside the busiest process, then
// every sampled process (% of one CPU: above 100 for a process busy on several CPUs).
function systemCards(m) {
  const pct = (v) => `${num(v, 3)} %`;
  const split = h("table", { class: "kv", id: "cpu-split" },
    h("caption", {}, `Time of all ${m.cpus} CPUs over the window (/proc/stat)`),
    Object.entries(m.split).map(([state, v]) => h("tr", {},
      h("th", { scope: "row" }, state),
      h("td", { class: "num" }, pct(v)),
      h("td", {}, h("meter", { min: 0, max: 100, value: v, "aria-hidden": "true" })))));
  const splitCard = h("section", { class: "card", id: "cpu-time" }, h("h2", {}, "CPU time"), split,
    h("p", {}, `${num(m.busy_cpus, 3)} of ${m.cpus} CPUs busy`),
    (m.hone || []).length === 0 ? null : h("p", { id: "hone-cost" },
      `hone itself, left out of these figures: ${pct(m.hone_cpu_pct)} of one CPU (` +
      m.hone.map((p) => `${p.comm} pid ${p.pid} ${num(p.cpu_pct, 3)}`).join(", ") + ")"),
    m.pressure === null ? null : h("p", {}, `CPU pressure (PSI): runnable work waited for a CPU ${pct(100 * m.pressure)} of the window`));

  const top = m.processes[0];
  const busiest = h("section", { class: "card", id: "busiest" }, h("h2", {}, "Busiest process"));
  if (!top) busiest.append(h("p", { class: "hint" }, "No process was sampled on a CPU."));
  else {
    const fact = (label, value) => [h("dt", {}, label), h("dd", {}, value)];
    busiest.append(
      h("dl", { class: "facts" },
        fact("command", top.command),
        fact("pid", String(top.pid)),
        fact("on CPU", `${pct(top.cpu_pct)} of one CPU (user ${pct(top.cpu_pct - top.kernel_pct)}, kernel ${pct(top.kernel_pct)})`),
        fact("hottest function", top.hottest || "—"),
        fact("busiest threads", threadList(top.threads) || "—")),
      h("p", {}, "Drill in: ", h("code", { class: "drill-in" }, top.drill_in)),
    );
  }

  const box = h("div", { id: "processes" });
  new DataTable(box, [
    { key: "pid", label: "pid", value: (p) => p.pid, numeric: true },
    { key: "command", label: "command", value: (p) => p.command, wrap: true },
    { key: "cpu", label: "CPU %", value: (p) => p.cpu_pct, text: (p) => num(p.cpu_pct, 3), numeric: true },
    { key: "user", label: "user %", value: (p) => p.cpu_pct - p.kernel_pct, text: (p) => num(p.cpu_pct - p.kernel_pct, 3), numeric: true },
    { key: "kernel", label: "kernel %", value: (p) => p.kernel_pct, text: (p) => num(p.kernel_pct, 3), numeric: true },
    { key: "samples", label: "samples", value: (p) => p.samples, numeric: true },
    { key: "source", label: "sized by", value: (p) => p.source || "samples" },
    { key: "hottest", label: "hottest function", value: (p) => p.hottest, wrap: true },
    { key: "threads", label: "busiest threads (% of one CPU)", value: (p) => threadList(p.threads) },
    { key: "drill", label: "drill in", value: (p) => p.drill_in, cls: () => "command" },
  ], { caption: "Processes by CPU time in % of one CPU: the kernel's count (/proc/PID/stat at the window's ends), or the on-CPU samples of a process that ended inside the window; user and kernel split as its samples' innermost frames" }).setRows(m.processes);
  return [
    h("div", { class: "grid two" }, splitCard, busiest),
    h("section", { class: "card" }, h("h2", {}, "Processes"), box),
  ];
}

function threadList(threads) {
  return threads.map((t) => `${t.comm}/${t.tid} ${num(t.cpu_pct, 3)}${t.source === "kernel" ? "" : " (samples)"}`).join(", ");
}

function knobList(suggestions) {
  if (!suggestions.length) return h("p", { class: "hint" }, "No knob suggested for this bottleneck.");
  return h("ul", { class: "knobs" }, suggestions.map((s) =>
    h("li", {}, h("strong", {}, s.name), ` — ${s.why}`,
      s.evidence ? h("span", { class: "hint" }, ` · measured: ${s.evidence}`) : "",
      s.present ? "" : h("span", { class: "hint" }, ` · not here: ${s.reason}`))));
}

function topdownView(t) {
  if (t.available) {
    const rows = Object.entries(t.level1).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", { class: "num" }, `${v.toFixed(1)} %`)));
    return h("div", {}, h("p", { class: "hint" }, `TMAM level 1 (${t.method})`), h("table", { class: "kv" }, rows));
  }
  const split = Object.entries(t.software || {}).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", { class: "num" }, `${v.toFixed(1)} %`)));
  return h("div", {},
    h("p", {}, h("strong", {}, "TMAM unavailable: "), t.evidence),
    split.length ? h("p", { class: "hint" }, "Software signals instead (share of the threads' time):") : null,
    split.length ? h("table", { class: "kv" }, split) : null);
}

function tableCard(title, tables) {
  const box = h("div");
  const order = h("select", { "aria-label": `${title} order` },
    h("option", { value: "total" }, "top-down (total %)"),
    h("option", { value: "self" }, "bottom-up (self %)"));
  const table = new DataTable(box, [
    { key: "name", label: title === "Functions" ? "function" : "module", value: (r) => r.name, wrap: true },
    ...(title === "Functions" ? [{ key: "module", label: "module", value: (r) => r.module.split("/").pop(), wrap: true }] : []),
    { key: "self", label: "self %", value: (r) => r.self, text: (r) => share(r.self), numeric: true },
    { key: "total", label: "total %", value: (r) => r.total, text: (r) => share(r.total), numeric: true },
  ]);
  order.addEventListener("change", () => table.setRows(tables[order.value]));
  table.setRows(tables.total);
  return h("section", { class: "card", id: `table-${title.toLowerCase()}` }, h("h2", {}, title), h("div", { class: "controls" }, order), box);
}

function offcpuCard(offcpu) {
  const totals = Object.entries(offcpu.totals_us || {});
  const rq = offcpu.runqueue;
  return h("section", { class: "card", id: "offcpu" }, h("h2", {}, "Off-CPU"),
    totals.length ? h("table", { class: "kv" }, totals.map(([k, us]) => h("tr", {}, h("th", {}, k), h("td", { class: "num" }, `${(us / 1000).toFixed(1)} ms`)))) : h("p", { class: "hint" }, "not recorded"),
    rq && rq.count ? h("p", {}, `Run-queue latency: ${rq.count} waits, median ${num(rq.p50_us, 3)} µs, p99 ${num(rq.p99_us, 3)} µs, max ${num(rq.max_us, 3)} µs`) : null);
}

function locksCard(locks) {
  const card = h("section", { class: "card", id: "locks" }, h("h2", {}, "Lock waits"));
  if (!locks) return card.append(h("p", { class: "hint" }, "not recorded")), card;
  const waits = [...locks.user, ...locks.kernel].sort((a, b) => b.wait_ms - a.wait_ms);
  const box = h("div");
  card.append(box);
  new DataTable(box, [
    { key: "lock", label: "lock", value: (w) => w.lock, wrap: true },
    { key: "kind", label: "kind", value: (w) => w.kind },
    { key: "wait", label: "wait ms", value: (w) => w.wait_ms, text: (w) => num(w.wait_ms, 3), numeric: true },
    { key: "count", label: "waits", value: (w) => w.count, numeric: true },
    { key: "site", label: "where", value: (w) => w.site, wrap: true },
    { key: "waiters", label: "threads", value: (w) => w.waiters.join(", ") },
  ]).setRows(waits);
  for (const note of locks.notes) card.append(h("p", { class: "hint" }, note));
  return card;
}

function capabilityList(caps) {
  return h("ul", { class: "capabilities" }, caps.items.map((c) =>
    h("li", {}, h("span", { class: c.available ? "yes" : "no" }, c.available ? "✔ " : "✖ "), h("strong", {}, c.name), ` — ${c.used_for}: `, h("span", { class: "hint" }, c.detail))));
}

// The flame graph is hone's own SVG (the one `hone diagnose` writes), fetched with the token and
// placed in the page; its script comes from the server's static files (the page's CSP allows
// no inline script), and its inline <style> is replaced by the same rules from a static file.
function flameCard(name, d, others) {
  const box = h("div", { id: "flame", class: "flame" });
  const status = h("span", { class: "hint", role: "status" });
  const view = h("select", { "aria-label": "flame graph view" },
    h("option", { value: "cpu" }, "on-CPU"),
    d.offcpu && Object.keys(d.offcpu.totals_us || {}).length ? h("option", { value: "offcpu" }, "off-CPU") : null);
  const base = h("select", { "aria-label": "compare with" },
    h("option", { value: "" }, "— no comparison —"),
    others.map((o) => h("option", { value: o.name }, `${o.name} (${o.target})`)));
  const moves = h("div", { id: "moves" });
  async function draw() {
    status.textContent = "drawing…";
    const width = Math.max(600, Math.floor(box.getBoundingClientRect().width || 1200));
    const query = new URLSearchParams({ view: view.value, width: String(width) });
    if (base.value) query.set("base", base.value);
    try {
      placeSvg(box, await getText(path(name, `/flame.svg?${query}`)));
      status.textContent = base.value ? `differential: widths of this run, red grew since ${base.value}, blue shrank` : "click a frame to zoom, Search to highlight";
      box.dataset.view = view.value;
      box.dataset.base = base.value;
      moves.replaceChildren();
      if (base.value) moves.append(await movesTable(name, base.value));
      ready(box, "diagnosis");
    } catch (error) {
      status.textContent = `cannot draw: ${error.message}`;
    }
  }
  view.addEventListener("change", draw);
  base.addEventListener("change", draw);
  queueMicrotask(draw);
  return h("section", { class: "card", id: "flame-card" },
    h("h2", {}, "Flame graph"),
    h("div", { class: "controls" }, h("label", {}, "view ", view), h("label", {}, "compare with ", base), status),
    box, moves);
}

async function movesTable(name, base) {
  const c = await get(path(name, `/compare?base=${encodeURIComponent(base)}`));
  const box = h("div", { id: "moves-table" });
  const rows = [
    ...c.functions.map((r) => ({ ...r, what: "function" })),
    ...c.modules.map((r) => ({ ...r, what: "module" })),
  ];
  new DataTable(box, [
    { key: "what", label: "kind", value: (r) => r.what },
    { key: "name", label: "name", value: (r) => r.name, wrap: true },
    { key: "before", label: `${base} %`, value: (r) => r.before, text: (r) => share(r.before), numeric: true },
    { key: "after", label: "this run %", value: (r) => r.after, text: (r) => share(r.after), numeric: true },
    { key: "change", label: "change (points)", value: (r) => r.after - r.before, text: (r) => `${r.after >= r.before ? "▲ +" : "▼ −"}${Math.abs(100 * (r.after - r.before)).toFixed(1)}`, numeric: true },
  ], { caption: "What gained or lost share of the on-CPU samples" }).setRows(rows);
  return h("div", {}, h("h3", {}, "What moved"), h("p", { id: "moves-summary" }, c.summary), box);
}

function placeSvg(box, text) {
  // Inline style would be refused by the page's policy: hidden groups are marked, then hidden
  // through the DOM instead; the rules of the <style> element come from the static file.
  const cleaned = text
    .replace(/<style>[\s\S]*?<\/style>/g, "")
    .replace(/<script>[\s\S]*?<\/script>/g, "")
    .replace(/ style="display:\s*none;?"/g, " data-hidden=\"\"")
    .replace(/ style="[^"]*"/g, "");
  const root = new DOMParser().parseFromString(cleaned, "image/svg+xml").documentElement;
  if (root.nodeName !== "svg") throw new Error("the server sent no SVG");
  const svgEl = document.importNode(root, true);
  svgEl.removeAttribute("width");
  svgEl.removeAttribute("height");
  for (const el of svgEl.querySelectorAll("[data-hidden]")) el.style.display = "none";
  clear(box).append(svgEl);
  if (!document.querySelector("link[data-flame]")) {
    document.head.append(h("link", { rel: "stylesheet", href: "/static/flame/flamegraph.css", "data-flame": "" }));
  }
  box.append(h("script", { src: "/static/flame/flamegraph.js" }));
}

export const subpages = { diagnosis: (main, arg) => diagnosisPage(main, arg) };
