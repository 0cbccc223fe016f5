// The studies list: state and gain of every study, selection for comparison, starting a study.
import { get, post } from "./api.js";
import { DataTable } from "./table.js";
import { bestSeen, clear, gainPct, h, message, ready, stateBadge, when } from "./util.js";

export async function studiesPage(main, { onLeave }) {
  clear(main);
  const status = h("div", { class: "status-line" });
  const tableBox = h("div", { id: "studies" });
  const selected = new Set();
  const compare = h("button", { type: "button", disabled: true, id: "compare-button", onclick: () => {
    location.hash = `#/compare/${[...selected].map(encodeURIComponent).join(",")}`;
  } }, "Compare selected");
  main.append(
    h("h1", {}, "Studies"),
    h("div", { class: "toolbar" }, compare, h("span", { class: "hint" }, "tick two or more studies to compare their curves")),
    status,
    tableBox,
    startForm(),
  );
  // A study shared by `hone worker`s: each worker and the trial it runs now (docs/scale.md).
  const workersText = (workers) =>
    (workers ?? [])
      .map((w) => `${w.id}: ${w.running !== null ? `#${w.running}` : w.state === "running" ? "idle" : w.state}`)
      .join(", ");
  const badgeText = (r) => `${r.state}${r.state === "running" && r.alive === false ? " (stale)" : ""}`;
  // A row keeps its cells' elements from one refresh to the next (table.js): a box ticked,
  // focused or pressed stays the box on screen.
  const pick = (row) => {
    const box = h("input", { type: "checkbox", "aria-label": `compare ${row.name}`, onchange: () => {
      if (box.checked) selected.add(row.name);
      else selected.delete(row.name);
      compare.disabled = selected.size < 2;
    } });
    box.checked = selected.has(row.name);
    return box;
  };
  const table = new DataTable(
    tableBox,
    [
      { key: "pick", label: "compare", value: (r) => (selected.has(r.name) ? 1 : 0), text: () => "", node: pick },
      { key: "name", label: "study", value: (r) => r.name, node: (r) => h("a", { href: `#/study/${encodeURIComponent(r.name)}` }, r.name) },
      { key: "state", label: "state", value: badgeText, node: (r) => stateBadge(r.state, r.alive) },
      { key: "engine", label: "engine", value: (r) => r.engine ?? "" },
      { key: "trials", label: "trials", value: (r) => r.trials, numeric: true },
      { key: "failures", label: "failed", value: (r) => r.failures, numeric: true },
      { key: "outcome", label: "outcome", value: (r) => r.outcome ?? "" },
      { key: "gain", label: "gain in confirmation", value: (r) => r.gain, text: (r) => gainPct(r.gain, r.gain_low, r.gain_high), numeric: true },
      { key: "best_gain", label: "best seen", value: (r) => r.best_gain, text: bestSeen, numeric: true },
      { key: "workers", label: "workers", value: (r) => workersText(r.workers) },
      { key: "created", label: "created", value: (r) => r.created ?? "", text: (r) => when(r.created) },
    ],
    { caption: "Every tuning study; click a name to open it", key: (r) => r.name, rowData: (r) => ({ study: r.name }) },
  );
  async function refresh() {
    try {
      const rows = await get("/api/studies");
      table.setRows(rows.slice().reverse());
      // No studies: said in words, not as an empty table with its headers
      tableBox.hidden = !rows.length;
      status.textContent = rows.length
        ? `${rows.length} studies · ${rows.filter((r) => r.state === "running" && r.alive !== false).length} running · updated ${new Date().toLocaleTimeString()}`
        : "No studies yet: run hone tune PROJECT on this machine, or start a served project below.";
      ready(main, "studies");
    } catch (error) {
      message(status, `cannot load the studies: ${error.message}`, "error");
    }
  }
  await refresh();
  const timer = setInterval(refresh, 5000);
  onLeave(() => clearInterval(timer));
}

function startForm() {
  const box = h("details", { class: "start" }, h("summary", {}, "Start a study"));
  (async () => {
    let projects = [];
    let engines = [];
    try {
      [projects, engines] = await Promise.all([get("/api/projects"), get("/api/engines")]);
    } catch (_) {
      return;
    }
    if (!projects.length) {
      box.append(h("p", { class: "hint" }, "No projects are served: start hone serve with --project DIR."));
      return;
    }
    const project = h("select", { name: "project" }, projects.map((p) => h("option", { value: p.name }, p.name)));
    const engine = h("select", { name: "engine" }, h("option", { value: "" }, "(project's own)"), engines.map((e) => h("option", { value: e }, e)));
    const budget = h("input", { type: "number", min: 1, max: 100000, name: "budget", placeholder: "project's own" });
    const out = h("p", { class: "hint", role: "status" });
    box.append(
      h("form", { class: "start-form", onsubmit: async (e) => {
        e.preventDefault();
        const body = { project: project.value };
        if (engine.value) body.engine = engine.value;
        if (budget.value) body.budget = Number(budget.value);
        try {
          const run = await post("/api/studies", body);
          out.textContent = `started ${run.project} (pid ${run.pid})`;
        } catch (error) {
          out.textContent = `not started: ${error.detail || error.message}`;
        }
      } },
        h("label", {}, "project ", project),
        h("label", {}, "engine ", engine),
        h("label", {}, "budget ", budget),
        h("button", { type: "submit" }, "Start"),
      ),
      out,
    );
  })();
  return box;
}
