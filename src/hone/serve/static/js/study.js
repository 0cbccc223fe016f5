// One study: summary and controls, curves against the baseline band, knob importance and effects,
// parallel coordinates, time per trial, and the trial table; all updated live while the study runs.
import { follow, get, post, studyPath } from "./api.js";
import { effectCurves, importanceBars, parallelCoordinates, timeChart, trialChart } from "./charts.js";
import { DataTable } from "./table.js";
import { bestSeen, clear, gainPct, h, message, num, pct, ready, stateBadge, when } from "./util.js";

export async function studyPage(main, name, { onLeave }) {
  clear(main);
  const started = performance.now();
  let study;
  let trials;
  try {
    [study, trials] = await Promise.all([get(studyPath(name)), get(studyPath(name, "/trials"))]);
  } catch (error) {
    message(main, `cannot load study ${name}: ${error.message}`, "error");
    return;
  }
  performance.mark("hone-study-data");
  const header = h("header", { class: "study-head" });
  // What the last action answered: kept across the header's redraws (every trial event redraws
  // it), else "Stop: done" or a refusal vanished with the next trial.
  const said = h("span", { class: "hint", role: "status", id: "action-status" });
  const live = h("p", { class: "live", role: "status", "aria-live": "polite" });
  const best = h("section", { class: "best card", "aria-label": "best configuration" });
  const curve = h("div", { class: "chart", id: "trial-chart" });
  const time = h("div", { class: "chart", id: "time-chart" });
  const importance = h("div", { id: "importance" });
  const effects = h("div", { id: "effects" });
  const why = h("section", { class: "card", id: "why", hidden: true });
  const fleet = h("section", { class: "card", id: "workers", hidden: true });
  const parallel = h("div", { id: "parallel" });
  const tableBox = h("div", { id: "trials" });
  main.append(
    header,
    live,
    h("div", { class: "grid two" }, best, h("section", { class: "card" }, h("h2", {}, "Knob importance"), importance, effects)),
    fleet,
    why,
    h("section", { class: "card" }, h("h2", {}, "Search progress"), curve),
    h("section", { class: "card" }, h("h2", {}, "Configurations tried (parallel coordinates)"), parallel),
    h("section", { class: "card" }, h("h2", {}, "Trials"), tableBox),
    h("section", { class: "card" }, h("h2", {}, "Time"), time),
  );

  const knobs = Object.keys(study.attrs.knobs || study.attrs.space || {});
  let metricNames = null;
  let table = null;
  // The columns follow the metrics seen so far (a live study reports its first ones later;
  // the table is then rebuilt once).
  function tableFor(rows) {
    const names = [...new Set(rows.flatMap((t) => Object.keys(t.metrics || {})))].sort();
    if (table && names.join() === metricNames.join()) return table;
    metricNames = names;
    // a trial left running by a process that is gone is interrupted, not running
    const shared = (study.workers ?? []).length > 0;
    // a worker's score is its gain over its own baseline; a metric may itself be called "score"
    const scored = names.includes("score") ? "trial score" : "score";
    const unit = scoreUnit(study);
    const scoreName = study.attrs.scores === "relative" ? "gain (%)" : unit ? `${scored} (${unit})` : scored;
    const units = Object.fromEntries((study.attrs.metrics || []).map((m) => [m.name, m.unit]));
    table = trialTable(clear(tableBox), knobs, names, units, shared, scoreName, () => (study.alive === false ? "interrupted" : study.state));
    return table;
  }

  let importanceDue = 0;
  function draw() {
    renderHeader(header, study, name, said);
    renderBest(best, study, trials);
    renderWorkers(fleet, study);
    renderWhy(why, study.attrs.why);
    const search = trials.filter((t) => t.phase === "search");
    const yLabel = study.attrs.scores === "relative" ? "gain (% over its worker's baseline)" : study.single_metric ? scoreLabel(study) : "score (weighted % over baseline)";
    trialChart(curve, search, study.band, yLabel);
    curve.dataset.points = String(search.filter((t) => t.score !== null).length);
    timeChart(time, trials);
    const drawn = parallelCoordinates(parallel, study.attrs.space || {}, trials);
    parallel.dataset.lines = String(drawn.lines);
    tableFor(trials).setRows(trials);
  }
  async function refreshImportance() {
    try {
      const shares = await get(studyPath(name, "/importance"));
      if (shares.length) importanceBars(importance, shares);
      else importance.replaceChildren(h("p", { class: "hint" }, "needs at least 4 finished trials with different scores"));
      effects.dataset.curves = String(effectCurves(effects, shares));
    } catch (error) {
      importance.replaceChildren(h("p", { class: "message error" }, error.message));
    }
  }
  draw();
  ready(main, "study");
  document.body.dataset.drawMs = String(Math.round(performance.now() - started));
  performance.mark("hone-study-drawn");
  refreshImportance();

  // Live: trials arrive from the database whoever runs the study; progress from this server's runs.
  let pending = false;
  const redraw = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
      if (Date.now() > importanceDue) {
        importanceDue = Date.now() + 5000;
        refreshImportance();
      }
    });
  };
  // The header's counts, best seen and gain are the study's summary, read again as trials come
  // (at most every 2 s, and once after the last): drawn from the first read alone, "trials"
  // stayed at the count the page was opened with while the table grew under it.
  let studyDue = 0;
  let studyTimer = null;
  let studyAgain = false; // a trial came while the summary was being read
  const refreshStudy = () => {
    if (studyTimer !== null) {
      studyAgain = true;
      return;
    }
    studyTimer = setTimeout(async () => {
      studyAgain = false;
      studyDue = Date.now() + 2000;
      try {
        study = await get(studyPath(study.name));
        redraw();
      } catch (_) {
        /* the next trial asks again */
      }
      studyTimer = null;
      if (studyAgain) refreshStudy();
    }, Math.max(0, studyDue - Date.now()));
  };
  onLeave(() => clearTimeout(studyTimer));
  const byNumber = new Map(trials.map((t, i) => [t.number, i]));
  // The stream leaves out the trials this page holds finished, below the first unfinished one.
  const open = trials.find((t) => t.state === "running" || t.state === "waiting");
  const after = open ? open.number : trials.length ? trials[trials.length - 1].number + 1 : 0;
  const stop = follow(
    studyPath(study.name, `/events?after=${after}`),
    async (kind, data) => {
      if (kind === "trial") {
        if (byNumber.has(data.number)) {
          const old = trials[byNumber.get(data.number)];
          if (old.state === data.state && old.score === data.score) return;
          trials[byNumber.get(data.number)] = data;
        } else {
          byNumber.set(data.number, trials.length);
          trials.push(data);
        }
        // which trial each worker runs now, and its state, are the study's: read them again
        if ((study.workers ?? []).length) study = await get(studyPath(study.name));
        else refreshStudy();
        redraw();
      } else if (kind === "state") {
        if (data.state !== study.state) {
          study = await get(studyPath(study.name));
          redraw();
        }
      } else if (kind === "progress") {
        live.textContent = progressText(data);
        if (data.event === "baseline") {
          study = await get(studyPath(study.name));
          redraw();
        }
      }
    },
    (state) => {
      live.dataset.stream = state;
      if (state !== "live") live.textContent = state;
    },
  );
  onLeave(stop);
}

function trialTable(box, knobs, metricNames, units, shared, scoreName, studyState) {
  const stateText = (t) => {
    if (t.lost) return "✖ lost";
    if (t.state === "fail") return "✖ failed";
    if (t.state !== "running") return "✔ complete";
    return studyState() === "running" ? "▶ running" : "‖ interrupted";
  };
  return new DataTable(
    box,
    [
      { key: "number", label: "#", value: (t) => t.number, numeric: true },
      { key: "phase", label: "phase", value: (t) => t.phase + (t.round !== null && t.round !== undefined ? ` r${t.round + 1}` : "") },
      ...(shared ? [{ key: "worker", label: "worker", value: (t) => t.worker ?? "" }] : []),
      ...knobs.map((k) => ({ key: `k:${k}`, label: k, value: (t) => t.config[k], text: (t) => String(t.config[k] ?? "") })),
      ...metricNames.map((m) => ({ key: `m:${m}`, label: units[m] ? `${m} (${units[m]})` : m, value: (t) => t.metrics?.[m] ?? null, text: (t) => num(t.metrics?.[m]), numeric: true })),
      { key: "score", label: scoreName, value: (t) => t.score, text: (t) => num(t.score), numeric: true },
      { key: "state", label: "state", value: stateText },
      { key: "seconds", label: "seconds", value: (t) => t.seconds, text: (t) => num(t.seconds, 3), numeric: true },
      { key: "error", label: "failure reason", value: (t) => t.error ?? "", cls: () => "reason" },
    ],
    {
      caption: "Every trial: parameters, metrics, score and failure reason",
      key: (t) => t.number, // each trial redraws the table: a trial's row stays (table.js)
      rowClass: (t) => (t.state === "fail" ? "failed" : ""),
      filters: [
        { label: "phase", options: [["", "all"], ["baseline", "baseline"], ["search", "search"], ["confirm", "confirm"], ["warmup", "warm-up"], ["disturbed", "disturbed"]], test: (t, v) => t.phase === v },
        { label: "state", options: [["", "all"], ["complete", "complete"], ["fail", "failed"], ["running", "running"]], test: (t, v) => t.state === v },
      ],
    },
  );
}

function scoreLabel(study) {
  const metric = (study.attrs.metrics || []).find((m) => (m.weight ?? 1) > 0);
  if (!metric) return "score";
  const unit = metric.unit ? `, ${metric.unit}` : "";
  if (metric.direction === "minimize") return `−${metric.name} (score${unit})`;
  return metric.unit ? `${metric.name} (${metric.unit})` : metric.name;
}

// The unit of a study's score, as the project declares it: its one scored metric's (the score
// is that metric's value), else % (a weighted score, or a worker's gain, is a percentage).
function scoreUnit(study) {
  if (study.attrs.scores === "relative" || !study.single_metric) return "%";
  return (study.attrs.metrics || []).find((m) => (m.weight ?? 1) > 0)?.unit ?? "";
}

function withUnit(text, unit) {
  return unit ? `${text} ${unit}` : text;
}

// The baseline band: mean ± σ in the score's unit. A weighted score's baseline mean is 0 by
// construction; its float remainder (-1.554e-15) is written as the 0 it is.
function baselineText(study) {
  const band = study.band;
  const sd = (band.high - band.mean) / 2;
  const mean = Math.abs(band.mean) < 1e-9 * sd ? 0 : band.mean;
  return `${withUnit(`${num(mean)} ± ${num(sd)}`, scoreUnit(study))} (σ, ${band.runs} runs, CV ${num(study.attrs.baseline_cv, 2)} %)`;
}

function progressText(event) {
  switch (event.event) {
    case "phase":
      return `phase ${event.phase} (${event.total})`;
    case "trial":
      return `${event.phase} ${event.done}/${event.total}` + (event.error ? ` — failed: ${event.error}` : "") + (event.best_gain !== null && event.best_gain !== undefined ? ` · best so far ${pct(event.best_gain)}` : "");
    case "baseline":
      return `baseline measured: noise CV ${event.cv.toFixed(1)} % over ${event.runs} runs`;
    case "finish":
      return `finished: ${event.outcome} — ${event.reason}`;
    case "stopped":
      return "stopped: every knob was put back";
    case "error":
      return `run failed: ${event.message}`;
    case "exit":
      return `run exited (${event.returncode})`;
    default:
      return event.message || event.event;
  }
}

// The header is redrawn with every trial; its link back is made once and its buttons are kept
// while they stay the same, as a press that spans a redraw (down on the old element, up on its
// replacement) is no click at all, and the focus on a replaced element is lost.
function renderHeader(header, study, name, out) {
  if (!header.querySelector(":scope > .crumbs")) {
    header.prepend(h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Studies"), " › ", name));
  }
  const act = (label, path, confirmText) =>
    h("button", { type: "button", onclick: async () => {
      if (confirmText && !confirm(confirmText)) return;
      try {
        await post(path);
        out.textContent = `${label}: done`;
      } catch (error) {
        out.textContent = `${label}: ${error.detail || error.message}`;
      }
    } }, label);
  // A study left "running" by a process that is gone (killed, machine rebooted) cannot be
  // stopped, only resumed.
  const stale = study.state === "running" && study.alive === false;
  const buttons = [
    ...(study.state === "running" && !stale ? [["Stop", studyPath(study.name, "/stop"), "Stop this study? Its knobs are put back."]] : []),
    ...(stale || study.state === "interrupted" || study.state === "failed" ? [["Resume", studyPath(study.name, "/resume")]] : []),
    ["Restore knobs", `/api/projects/${encodeURIComponent(study.project)}/restore`, `Put back every knob a run of ${study.project} changed?`],
  ];
  const key = buttons.map(([label]) => label).join("|");
  let controls = header.querySelector(":scope > .controls");
  if (controls?.dataset.key !== key) {
    const fresh = h("div", { class: "controls", "data-key": key }, buttons.map((args) => act(...args)), out);
    if (controls) controls.replaceWith(fresh);
    else header.append(fresh);
    controls = fresh;
  }
  const facts = [
    ["engine", study.engine],
    ["budget", study.budget],
    ["trials", `${study.trials} (${study.failures} failed)`],
    ["baseline", (study.workers ?? []).length ? "each worker's own (every score is a gain in % over it; see Workers)" : study.band ? baselineText(study) : "not measured yet"],
    ["gain in confirmation", gainPct(study.gain, study.gain_low, study.gain_high) || "—"],
    ["measurement", quality(study.attrs.quality)],
    ...(study.attrs.selection ? [["knobs kept", selectionText(study.attrs.selection)]] : []),
    ["best seen", bestSeen(study) || "—"],
    ["created", when(study.created)],
  ];
  const parts = [
    h("h1", {}, study.name, " ", stateBadge(study.state, study.alive)),
    h("dl", { class: "facts" }, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "")])),
    study.attrs.error ? h("p", { class: "message error" }, `stopped: ${study.attrs.error}`) : null,
  ];
  let summary = header.querySelector(":scope > .summary");
  if (!summary) summary = header.insertBefore(h("div", { class: "summary" }), controls);
  summary.replaceChildren(...parts.filter(Boolean));
}

// The study's selection of knobs (tuning: {select: ...}): searched from then on, the others held.
function selectionText(selection) {
  const held = Object.entries(selection.held ?? {}).map(([k, v]) => `${k}=${v}`).join(", ");
  return `${(selection.knobs ?? []).join(", ")}; held: ${held || "none"}`;
}

function quality(q) {
  if (!q) return "—";
  // null: no gain is confirmable (one round has no spread to test against; JSON has no inf)
  const gain = (g) => (g === null || g === undefined ? null : `${num(g, 2)} %`);
  const rounds = (n) => `${n} round${n === 1 ? " confirms" : "s confirm"}`;
  const first = gain(q.detectable) ? `gains from ${gain(q.detectable)}` : "no gain";
  const most = q.max_rounds > q.rounds ? `, ${q.max_rounds} rounds from ${gain(q.detectable_max) ?? "—"}` : "";
  return `CV ${num(q.cv, 2)} %; ${rounds(q.rounds)} ${first}${most}`;
}

function renderBest(el, study, trials) {
  const result = study.attrs.result || {};
  const search = trials.filter((t) => t.phase === "search" && t.score !== null);
  const top = search.reduce((a, t) => (a === null || t.score > a.score ? t : a), null);
  const config = result.best || (top && top.config);
  el.replaceChildren(h("h2", {}, result.best ? "Best configuration (confirmed)" : "Best so far"));
  if (!config) {
    el.append(h("p", { class: "hint" }, noBest(study, trials)));
    return;
  }
  el.append(
    h("table", { class: "kv" }, h("tbody", {}, Object.entries(config).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, String(v)))))),
  );
  const risk = result.risk;
  if (risk) {
    el.append(h("p", { class: "message" }, "risky values: ", risk.risks.join("; ")));
    for (const side of ["risky", "safe"]) {
      const entry = risk[side];
      const gain = entry && entry.gain ? storedGain(entry.gain) : "none confirmed";
      const config = entry ? Object.entries(entry.config).map(([k, v]) => `${k}=${v}`).join(", ") : "";
      el.append(h("p", {}, h("strong", {}, `${side} winner`), `: ${config} ${gain}`));
    }
  }
  if (result.warmup) el.append(h("p", { class: "hint" }, `${result.warmup} first reading(s) after a restart left out as a warm-up transient, each measured again`));
  if (result.disturbed) el.append(h("p", { class: "hint" }, `${result.disturbed} reading(s) taken while the machine was disturbed, each measured again`));
  if (result.outcome) el.append(h("p", {}, h("strong", {}, result.outcome), ": ", result.reason || ""));
  else if (top) el.append(h("p", {}, `trial #${top.number}, score ${withUnit(num(top.score), scoreUnit(study))}`));
}

// Why there is no best: still to come only while the study runs; otherwise what happened.
function noBest(study, trials) {
  const search = trials.filter((t) => t.phase === "search");
  const failed = search.filter((t) => t.state === "fail").length;
  const running = study.state === "running" && study.alive !== false;
  if (failed && failed === search.length && !running) return `no configuration measured: all ${failed} search trials failed (reasons in the trial table)`;
  if (running) return failed ? `no finished search trial yet (${failed} failed)` : "no finished search trial yet";
  return failed ? `no configuration measured: ${failed} search trials failed, the others did not finish` : "no search trial was run";
}

// A study shared by `hone worker`s (docs/scale.md): each worker, where it runs, what it runs now,
// its own machine's baseline (every score is a gain over it) and the error that stopped it.
function renderWorkers(el, study) {
  const workers = study.workers ?? [];
  el.hidden = !workers.length;
  if (!workers.length) return;
  const units = Object.fromEntries((study.attrs.metrics || []).map((m) => [m.name, m.unit ?? ""]));
  const baseline = (metrics) =>
    Object.entries(metrics ?? {})
      .map(([k, v]) => `${k} ${num(v)}${units[k] ? ` ${units[k]}` : ""}`)
      .join(", ");
  const doing = (w) => (w.running !== null && w.running !== undefined ? `trial #${w.running}` : w.state === "running" ? "idle" : "—");
  const cells = (w) => [w.id, w.host ?? "", w.pid ?? "", w.state ?? "", doing(w), baseline(w.baseline_metrics), w.baseline_cv === null || w.baseline_cv === undefined ? "" : `${num(w.baseline_cv, 2)} %`, w.error ?? ""];
  el.replaceChildren(
    h("h2", {}, `Workers (${workers.length})`),
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { class: "data" },
        h("caption", {}, "Each machine sharing this study; its scores are gains over its own baseline"),
        h("thead", {}, h("tr", {}, ["worker", "host", "pid", "state", "running now", "baseline", "noise CV", "error"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, workers.map((w) => h("tr", { "data-worker": w.id, class: w.state === "lost" || w.error ? "failed" : "" }, cells(w).map((c, i) => h("td", { class: i === 7 ? "reason" : "" }, String(c)))))),
      ),
    ),
  );
}

// Why it won (hone.tune.why): the paragraph, then the functions and wait states whose share of
// the worker's time moved most between one profiled reading of the baseline and of the winner.
function renderWhy(el, why) {
  el.hidden = !why;
  if (!why) return;
  el.replaceChildren(h("h2", {}, "Why it won"));
  if (why.missing) {
    el.append(h("p", { class: "hint" }, `no profile: ${why.missing}`));
    return;
  }
  el.append(
    h("p", {}, why.text),
    h("p", { class: "hint" }, `share of ${why.process}'s time on and off the CPU, one reading each under perf: baseline ${num(why.seconds.baseline)} s, winner ${num(why.seconds.winner)} s`),
    h(
      "table",
      { class: "kv" },
      h("thead", {}, h("tr", {}, ["function or wait state, with what it calls", "baseline", "winner", "change"].map((t) => h("th", { scope: "col" }, t)))),
      h(
        "tbody",
        {},
        why.changes.map((c) =>
          h("tr", {}, h("td", {}, c.name), h("td", {}, share(c.before)), h("td", {}, share(c.after)), h("td", {}, `${c.delta >= 0 ? "+" : "−"}${Math.abs(100 * c.delta).toFixed(1)} points`)),
        ),
      ),
    ),
  );
}

function share(value) {
  return `${(100 * value).toFixed(1)} %`;
}

// A gain stored in a study's result: its interval's ends, or (a record written before they
// were stored) the mean ± a half-width.
function storedGain(gain) {
  const half = gain.half_width;
  const known = half !== null && half !== undefined;
  const low = "low" in gain ? gain.low : known ? gain.mean - half : null;
  const high = "high" in gain ? gain.high : known ? gain.mean + half : null;
  return gainPct(gain.mean, low, high);
}
