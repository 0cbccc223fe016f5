// The machine: gauges for CPU, memory, disk and network, live metric charts, the busiest
// processes, and (when hone has them) the recognised workload and the active profile.
import { follow, get, post } from "./api.js";
import { charts, DASHES, PALETTE } from "./charts.js";
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { DataTable } from "./table.js";
import { clear, h, message, num, ready, svg } from "./util.js";

const KEEP = 300; // samples kept in the charts (5 minutes at one a second)
const GAUGES = [
  ["cpu", "CPU"],
  ["memory", "Memory"],
  ["disk", "Disk"],
  ["network", "Network"],
];
const CHARTS = [
  { name: "utilisation", title: "Utilisation (%)", series: GAUGES.map(([key, label]) => [label, (s) => s.gauges[key]]) },
  {
    name: "cpu",
    title: "CPU time (%)",
    series: [
      ["user", (s) => s.metrics["CPU.STAT.usr"]],
      ["system", (s) => s.metrics["CPU.STAT.sys"]],
      ["iowait", (s) => s.metrics["CPU.STAT.iowait"]],
      ["steal", (s) => s.metrics["CPU.STAT.steal"]],
    ],
  },
  {
    name: "pressure",
    title: "Pressure stall (% of time some task waited)",
    series: [
      ["CPU", (s) => s.metrics["PSI.CPU.some"]],
      ["memory", (s) => s.metrics["PSI.MEM.some"]],
      ["IO", (s) => s.metrics["PSI.IO.some"]],
    ],
  },
  {
    name: "io",
    title: "Disk and network throughput",
    series: [
      ["disk read MB/s", (s) => s.metrics["STORAGE.STAT.rMBs"]],
      ["disk write MB/s", (s) => s.metrics["STORAGE.STAT.wMBs"]],
      ["net rx MB/s", (s) => mb(s.metrics["NET.STAT.rxkBs"])],
      ["net tx MB/s", (s) => mb(s.metrics["NET.STAT.txkBs"])],
    ],
  },
];

function mb(kb) {
  return kb === undefined || kb === null ? null : kb / 1024;
}

export async function page(main, _arg, { onLeave }) {
  clear(main);
  main.append(h("h1", {}, "Machine"));
  let info;
  try {
    info = await get("/api/machine");
  } catch (error) {
    message(main, `cannot read the machine: ${error.message}`, "error");
    return;
  }
  const live = h("p", { class: "live", role: "status", "aria-live": "off" });
  const gaugeBox = h("div", { class: "gauges", id: "gauges" });
  const chartBoxes = CHARTS.map((c) => h("div", { class: "chart", id: `machine-${c.name}` }));
  const procBox = h("div", { id: "processes" });
  const extras = h("div", { class: "grid two", id: "machine-extras" });
  main.append(
    h("p", { class: "hint" }, `${info.hostname} · kernel ${info.kernel} · ${info.cores} cores · disk ${info.disk} · network ${info.network}` + (info.unavailable.length ? ` · not measurable here: ${info.unavailable.join(", ")}` : "")),
    live,
    h("section", { class: "card" }, h("h2", {}, "Now"), gaugeBox),
    extras,
    h("div", { class: "grid two" }, chartBoxes.map((box) => h("section", { class: "card" }, box))),
    h("section", { class: "card" }, h("h2", {}, "Busiest processes"), procBox),
  );
  for (const [key, label] of GAUGES) gaugeBox.append(gauge(key, label));
  const procs = new DataTable(procBox, [
    { key: "pid", label: "pid", value: (p) => p.pid, numeric: true },
    { key: "name", label: "name", value: (p) => p.name },
    { key: "cpu", label: "CPU %", value: (p) => p.cpu, text: (p) => num(p.cpu, 3), numeric: true },
    { key: "threads", label: "threads", value: (p) => p.threads, numeric: true },
    { key: "state", label: "state", value: (p) => p.state },
    { key: "busiest", label: "busiest threads", value: (p) => (p.busiest_threads || []).map((t) => `${t.name} ${num(t.cpu, 3)} %`).join(", ") },
  ], { key: (p) => p.pid }); // a new sample every second: a process's row stays (table.js)
  for (const extra of machineExtras) extra(extras, onLeave);

  const samples = [];
  const plots = CHARTS.map((c, i) => makeChart(c, chartBoxes[i]));
  const stop = follow("/api/machine/stream?interval=1", (kind, sample) => {
    if (kind !== "sample") return;
    samples.push(sample);
    if (samples.length > KEEP) samples.shift();
    for (const [key] of GAUGES) setGauge(key, sample.gauges[key]);
    const x = samples.map((s) => s.time);
    CHARTS.forEach((c, i) => plots[i].setData([x, ...c.series.map(([, get]) => samples.map((s) => get(s) ?? null))]));
    procs.setRows(sample.processes);
    live.textContent = `sampled ${new Date(sample.time * 1000).toLocaleTimeString()} · ${samples.length} samples`;
    live.dataset.samples = String(samples.length);
    ready(main, "machine");
  });
  onLeave(stop);
}

// Cards beside the gauges: the recognised workload and the active profile.
export const machineExtras = [analysisCard, profileCard];

// The workload class and the USE bottleneck, from `hone.analyze` sampling the machine.
function analysisCard(container) {
  const card = h("section", { class: "card", id: "analysis" }, h("h2", {}, "Workload"));
  container.append(card);
  const out = h("div", { id: "analysis-result" });
  const status = h("span", { class: "hint", role: "status" });
  const seconds = h("select", { "aria-label": "analysis duration" }, [5, 15, 45, 90].map((s) => h("option", { value: s, selected: s === 45 }, `${s} s`)));
  const run = h("button", { type: "button", id: "analyze-button", onclick: async () => {
    run.disabled = true;
    status.textContent = `sampling for ${seconds.value} s…`;
    try {
      showAnalysis(out, await get(`/api/analysis?duration=${seconds.value}`));
      status.textContent = `analysed ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      status.textContent = `analysis failed: ${error.detail || error.message}`;
    }
    run.disabled = false;
  } }, "Analyze");
  card.append(h("p", { class: "hint" }, "Samples the machine, names the workload class (hone's classifier, trained on A-Tune's data and runs on real servers) and the bottleneck in USE terms."), h("div", { class: "controls" }, run, seconds, status), out);
}

function showAnalysis(out, a) {
  const second = Object.entries(a.probabilities)[1];
  const use = h("div");
  new DataTable(use, [
    { key: "name", label: "resource", value: (r) => r.name },
    { key: "verdict", label: "verdict", value: (r) => ({ saturated: "✖ saturated", busy: "! busy", ok: "✔ ok" })[r.verdict] || r.verdict },
    { key: "utilisation", label: "utilisation", value: (r) => r.utilisation, text: (r) => r.utilisation_text },
    { key: "saturation", label: "saturation", value: (r) => r.saturation, text: (r) => r.saturation_text },
    { key: "errors", label: "errors", value: (r) => r.errors },
  ]).setRows(a.resources);
  out.replaceChildren(
    h("p", {}, "class: ", h("strong", { id: "workload-class" }, a.class), ` (${(100 * a.confidence).toFixed(0)} % confidence` + (second ? `; next: ${second[0]} ${(100 * second[1]).toFixed(0)} %)` : ")")),
    h("p", {}, "bottleneck: ", h("strong", { id: "workload-bottleneck" }, a.bottleneck || "none: nothing is saturated")),
    h("p", { class: "hint", id: "workload-model" }, `model: ${a.model}, ${a.hardware ? "with" : "without"} hardware counters`),
    h("p", { class: "hint" }, "what points to it: ", a.features.map((f) => `${f.name} ${num(f.value, 3)} (typical ${num(f.typical, 3)})`).join("; ")),
    use,
    a.profile ? applyButton(a.profile, a.class) : null,
  );
}

// The recognised class's profile with a button to apply it; a refusal (a wrong token, a busy
// journal) is said beside the button, which stays for another try.
function applyButton(profile, workload) {
  const said = h("span", { class: "hint", role: "status", id: "workload-applied" });
  const button = h("button", { type: "button", onclick: async () => {
    try {
      const result = await post(`/api/profiles/${encodeURIComponent(profile)}/apply`);
      button.remove();
      said.textContent = `applied, ${result.changed} item(s) changed (roll back from the Profile card)`;
    } catch (error) {
      said.textContent = `not applied: ${error.detail || error.message}`;
    }
  } }, "Apply it");
  return h("p", {}, `profile for ${workload}: `, h("strong", {}, profile), " ", button, " ", said);
}

const STATUS = { matches: "✔ matches", differs: "✖ differs", set: "✔ set", staged: "… staged", unchanged: "= unchanged", skipped: "– skipped", advice: "ℹ advice", unknown: "? unknown" };

function profileCard(container) {
  const card = h("section", { class: "card", id: "profile" }, h("h2", {}, "Profile"));
  container.append(card);
  const body = h("div");
  const out = h("p", { class: "hint", role: "status" });
  card.append(body, out);
  const items = h("div");
  const table = new DataTable(items, [
    { key: "section", label: "section", value: (i) => i.section },
    { key: "key", label: "item", value: (i) => i.key },
    { key: "value", label: "value", value: (i) => i.value },
    { key: "status", label: "live system", value: (i) => STATUS[i.status] || i.status },
    { key: "detail", label: "detail", value: (i) => i.detail || "" },
  ]);
  async function load() {
    let active;
    let all;
    try {
      [active, all] = await Promise.all([get("/api/profiles/active"), get("/api/profiles")]);
    } catch (error) {
      body.replaceChildren(h("p", { class: "hint" }, `profiles unavailable: ${error.message}`));
      return;
    }
    const select = h("select", { "aria-label": "profile to apply" }, all.map((p) => h("option", { value: p.name }, p.name + (p.active ? " (active)" : ""))));
    const act = (label, run) => h("button", { type: "button", onclick: async () => {
      try {
        out.textContent = `${label}: ${await run()}`;
      } catch (error) {
        out.textContent = `${label}: ${error.detail || error.message}`;
      }
      load();
    } }, label);
    body.replaceChildren(...[
      h("p", {}, "active: ", h("strong", { id: "active-profile" }, active.name || "none")),
      active.error ? h("p", { class: "message error" }, active.error) : null,
      h("div", { class: "controls" },
        select,
        act("Apply", async () => {
          const result = await post(`/api/profiles/${encodeURIComponent(select.value)}/apply`);
          return `${result.profile} applied, ${result.changed} item(s) changed`;
        }),
        active.name ? act("Roll back", async () => `${(await post("/api/profiles/rollback")).restored.length} value(s) put back`) : null,
      ),
      items,
    ].filter(Boolean));
    table.setRows(active.items);
  }
  load();
}

function makeChart(config, el) {
  const series = [{ label: "time" }];
  config.series.forEach(([label], i) => {
    series.push({ label, stroke: PALETTE[i % PALETTE.length], dash: DASHES[i % DASHES.length], width: 2, points: { show: false } });
  });
  const plot = new uPlot(
    {
      title: config.title,
      width: Math.max(320, Math.floor(el.getBoundingClientRect().width || 500)),
      height: 220,
      series,
      axes: [{}, { size: 50 }],
    },
    [[], ...config.series.map(() => [])],
    el,
  );
  charts[`machine-${config.name}`] = plot;
  return plot;
}

function gauge(key, label) {
  // A half circle from 0 to 100 %; the number is written inside, so no colour is needed.
  const radius = 60;
  const arc = (fraction) => {
    const angle = Math.PI * (1 - fraction);
    const x = 70 + radius * Math.cos(angle);
    const y = 75 - radius * Math.sin(angle);
    return `M 10 75 A ${radius} ${radius} 0 0 1 ${x.toFixed(2)} ${y.toFixed(2)}`;
  };
  const drawing = svg(
    "svg",
    { viewBox: "0 0 140 100", class: "gauge", role: "img", "aria-label": `${label} utilisation`, id: `gauge-${key}` },
    svg("path", { d: arc(0.9999), class: "gauge-track" }),
    svg("path", { d: arc(0), class: "gauge-value" }),
    svg("text", { x: 70, y: 70, "text-anchor": "middle", class: "gauge-number" }, "–"),
    svg("text", { x: 70, y: 95, "text-anchor": "middle", class: "gauge-label" }, label),
  );
  drawing.arc = arc;
  return h("figure", { class: "gauge-box" }, drawing);
}

function setGauge(key, value) {
  const drawing = document.getElementById(`gauge-${key}`);
  if (!drawing) return;
  const number = drawing.querySelector(".gauge-number");
  const path = drawing.querySelector(".gauge-value");
  if (value === null || value === undefined) {
    number.textContent = "n/a";
    path.setAttribute("d", drawing.arc(0));
    drawing.dataset.value = "";
    return;
  }
  const fraction = Math.min(1, Math.max(0, value / 100));
  path.setAttribute("d", drawing.arc(Math.max(fraction, 0.0001)));
  number.textContent = `${value.toFixed(value < 10 ? 1 : 0)} %`;
  drawing.dataset.value = String(value);
}
