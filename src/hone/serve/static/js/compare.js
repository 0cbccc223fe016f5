// Several studies on one chart: each one's best-so-far gain over its own baseline.
import { get, studyPath } from "./api.js";
import { compareChart, DASHES } from "./charts.js";
import { DataTable } from "./table.js";
import { bestSeen, clear, gainPct, h, message, ready } from "./util.js";

// The gain the tuner reports (hone.storage.summary.gain_of): % of the baseline when the score is
// one metric's raw value, else the difference of scores that are already percentages (weighted,
// or a `hone worker`'s gain over its own machine's baseline, whose study baseline is 0).
export function gainOf(study, score) {
  const base = study.baseline_score;
  if (score === null || base === null || base === undefined) return null;
  if (study.attrs?.scores === "relative" || !study.single_metric) return score - base;
  return base ? ((score - base) / Math.abs(base)) * 100 : null;
}

export function bestGains(study, trials) {
  const gains = [];
  let best = null;
  for (const t of trials.filter((t) => t.phase === "search")) {
    const gain = gainOf(study, t.score);
    if (gain !== null && (best === null || gain > best)) best = gain;
    gains.push(best);
  }
  return gains;
}

export async function comparePage(main, names) {
  clear(main);
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Studies"), " › compare"), h("h1", {}, "Compare studies"));
  if (!names.length) {
    main.append(h("p", { class: "hint" }, "No study named: tick two or more on the Studies page, then Compare selected."));
    ready(main, "compare");
    return;
  }
  let loaded;
  try {
    loaded = await Promise.all(
      names.map(async (name) => {
        const [study, trials] = await Promise.all([get(studyPath(name)), get(studyPath(name, "/trials"))]);
        return { ...study, gains: bestGains(study, trials) };
      }),
    );
  } catch (error) {
    message(main, `cannot load: ${error.message}`, "error");
    return;
  }
  const chart = h("div", { class: "chart", id: "compare-chart" });
  const tableBox = h("div");
  main.append(h("section", { class: "card" }, chart), h("section", { class: "card" }, tableBox));
  compareChart(chart, loaded);
  const table = new DataTable(tableBox, [
    { key: "line", label: "line", value: (s) => loaded.indexOf(s), text: (s) => dashName(loaded.indexOf(s)) },
    { key: "name", label: "study", value: (s) => s.name },
    { key: "state", label: "state", value: (s) => s.state },
    { key: "engine", label: "engine", value: (s) => s.engine },
    { key: "trials", label: "trials", value: (s) => s.trials, numeric: true },
    { key: "best", label: "best seen", value: (s) => s.best_gain, text: bestSeen, numeric: true },
    { key: "gain", label: "gain in confirmation", value: (s) => s.gain, text: (s) => gainPct(s.gain, s.gain_low, s.gain_high), numeric: true },
  ]);
  table.setRows(loaded);
  ready(main, "compare");
}

function dashName(i) {
  const dash = DASHES[i % DASHES.length];
  return dash.length === 0 ? "solid" : dash.length === 2 && dash[0] > 4 ? "dashed" : dash.length === 2 ? "dotted" : "dash-dot";
}
