// Charts: uPlot for curves (fast with thousands of points), small SVG drawings for the rest.
// Series differ by form as well as colour: points, solid, dashed and dotted lines, labels.
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { num, shorten, svg } from "./util.js";

export const charts = (window.honeCharts = window.honeCharts || {});

const INK = "#1b1b1b";
const BLUE = "#1f5fa8";
const ORANGE = "#c2410c";
const BAND = "rgba(110, 110, 110, 0.18)";
// Colour-blind-safe palette (Okabe-Ito) paired with dash patterns, for several series at once.
export const PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"];
// Trial numbers are whole: no 2.5 on an x axis.
const WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

export const DASHES = [[], [10, 5], [2, 4], [12, 4, 2, 4], [6, 3, 6, 3, 1, 3], [1, 2], [16, 6]];

function width(el) {
  return Math.max(320, Math.floor(el.getBoundingClientRect().width || 600));
}

// A chart drawn again in the same place with the same series is given the new data instead of
// being made anew (the study page draws its charts with every trial): series hidden from the
// legend stay hidden, a range zoomed into stays, and a legend click pressed across it counts.
function makePlot(name, el, opts, data) {
  const old = charts[name];
  const shape = JSON.stringify([opts.title, (opts.axes || []).map((a) => a.label), opts.series.map((s) => s.label)]);
  if (old && old.root.parentElement === el && old.shape === shape) {
    const x = old.data[0];
    const zoomed = x.length > 0 && (old.scales.x.min > x[0] || old.scales.x.max < x[x.length - 1]);
    old.setData(data, !zoomed);
    return old;
  }
  if (old) old.destroy();
  const plot = new uPlot({ width: width(el), height: opts.height || 300, ...opts }, data, el);
  plot.shape = shape;
  charts[name] = plot;
  return plot;
}

// Resize every chart with its container (laptop screen to large monitor).
let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    for (const plot of Object.values(charts)) {
      if (plot && plot.root && plot.root.parentElement) {
        plot.setSize({ width: width(plot.root.parentElement), height: plot.height });
      }
    }
  }, 100);
});

// Score of each search trial, the best so far, and the baseline band (mean ± 2σ: its noise).
export function trialChart(el, search, band, yLabel) {
  const x = search.map((_, i) => i + 1);
  const scores = search.map((t) => t.score);
  let best = null;
  const bestSoFar = scores.map((s) => (s !== null && (best === null || s > best) ? (best = s) : best));
  const series = [
    { label: "search trial" },
    {
      label: "trial score",
      stroke: BLUE,
      width: 0,
      paths: () => null,
      points: { show: true, size: 7, stroke: BLUE, fill: "#fff", width: 1.5 },
    },
    { label: "best so far", stroke: ORANGE, width: 2.5, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } },
  ];
  const data = [x, scores, bestSoFar];
  const bands = [];
  if (band) {
    series.push(
      { label: "baseline mean", stroke: INK, width: 1.5, dash: [8, 5], points: { show: false } },
      { label: "baseline +2σ", stroke: "#777", width: 1, dash: [2, 3], points: { show: false } },
      { label: "baseline −2σ", stroke: "#777", width: 1, dash: [2, 3], points: { show: false } },
    );
    data.push(x.map(() => band.mean), x.map(() => band.high), x.map(() => band.low));
    bands.push({ series: [4, 5], fill: BAND });
  }
  return makePlot(
    "trials",
    el,
    {
      title: "Score per search trial, best so far, and the baseline band (higher is better)",
      scales: { x: { time: false } },
      axes: [{ label: "search trial", incrs: WHOLE }, { label: yLabel, size: 70 }],
      series,
      bands,
      legend: { live: true },
    },
    data,
  );
}

// Seconds each trial took (all phases), benchmark part and the rest.
export function timeChart(el, trials) {
  const x = trials.map((t) => t.number);
  return makePlot(
    "time",
    el,
    {
      title: "Time per trial (all phases)",
      height: 220,
      scales: { x: { time: false } },
      axes: [{ label: "trial #", incrs: WHOLE }, { label: "seconds", size: 60 }],
      series: [
        { label: "trial #" },
        { label: "whole trial", stroke: INK, width: 1.5, points: { show: true, size: 4 } },
        { label: "benchmark", stroke: BLUE, width: 1.5, dash: [6, 4], points: { show: false } },
      ],
    },
    [x, trials.map((t) => t.seconds ?? null), trials.map((t) => t.benchmark_seconds ?? null)],
  );
}

// Best-so-far gain (%) of several studies on one chart, one dash pattern and colour each.
export function compareChart(el, studies) {
  const longest = Math.max(1, ...studies.map((s) => s.gains.length));
  const x = Array.from({ length: longest }, (_, i) => i + 1);
  const series = [{ label: "search trial" }];
  const data = [x];
  studies.forEach((study, i) => {
    series.push({
      label: `${study.name} (${study.state})`,
      stroke: PALETTE[i % PALETTE.length],
      dash: DASHES[i % DASHES.length],
      width: 2.5,
      paths: uPlot.paths.stepped({ align: 1 }),
      points: { show: false },
    });
    data.push(x.map((_, j) => (j < study.gains.length ? study.gains[j] : null)));
  });
  return makePlot(
    "compare",
    el,
    {
      title: "Best so far: gain over each study's baseline (%)",
      height: 360,
      scales: { x: { time: false } },
      axes: [{ label: "search trial", incrs: WHOLE }, { label: "gain %", size: 60 }],
      series,
    },
    data,
  );
}

// A label that may be shortened, with its whole text as a tooltip (kept out of the label's own
// text, which stays what is drawn).
function named(whole, label) {
  return svg("g", {}, svg("title", {}, whole), label);
}

// Horizontal bars with the share written beside each, so no colour is needed to read them.
export function importanceBars(el, shares) {
  const rowHeight = 26;
  // Room for the longest name up to 40 characters (under 8 px each); longer ones are cut in
  // the middle, whole in their tooltip: a fixed width clipped their start off the drawing.
  const chars = Math.min(40, Math.max(8, ...shares.map((s) => String(s.knob).length)));
  const labelWidth = chars * 8 + 16;
  const barWidth = 360;
  const drawing = svg("svg", {
    viewBox: `0 0 ${labelWidth + barWidth + 70} ${rowHeight * shares.length + 4}`,
    class: "importance",
    role: "img",
    "aria-label": "knob importance",
  });
  shares.forEach((s, i) => {
    const y = i * rowHeight + 2;
    drawing.append(
      named(s.knob, svg("text", { x: labelWidth - 8, y: y + 17, "text-anchor": "end" }, shorten(s.knob, chars))),
      svg("rect", { x: labelWidth, y: y + 4, width: Math.max(1, s.share * barWidth), height: rowHeight - 10, class: "bar" }),
      svg("text", { x: labelWidth + s.share * barWidth + 6, y: y + 17 }, `${(s.share * 100).toFixed(1)} %`),
    );
  });
  el.replaceChildren(drawing);
}

// Parallel coordinates: one line per finished search trial across every knob and the score.
// The best trial is drawn thick and dashed and labelled; others are thin, shaded by score.
export function parallelCoordinates(el, space, trials) {
  const knobs = Object.keys(space);
  const done = trials.filter((t) => t.score !== null && t.phase === "search");
  const axes = [
    ...knobs.map((k) => axisFor(k, space[k], done.map((t) => t.config[k]))),
    axisFor("score", null, done.map((t) => t.score)),
  ];
  const W = Math.max(560, width(el));
  const H = 320;
  const top = 44;
  const bottom = H - 26;
  const left = 50;
  const step = axes.length > 1 ? (W - 2 * left) / (axes.length - 1) : 0;
  const drawing = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "parallel", role: "img", "aria-label": "parallel coordinates of the trials" });
  const y = (axis, value) => bottom - axis.position(value) * (bottom - top);
  const ranked = [...done].sort((a, b) => a.score - b.score);
  const best = ranked[ranked.length - 1];
  const lines = svg("g", { class: "lines" });
  ranked.forEach((trial, rank) => {
    const points = axes.map((axis, i) => {
      const value = i === axes.length - 1 ? trial.score : trial.config[axis.name];
      return `${(left + i * step).toFixed(1)},${y(axis, value).toFixed(1)}`;
    });
    const shade = ranked.length > 1 ? rank / (ranked.length - 1) : 1;
    const isBest = trial === best;
    lines.append(
      svg(
        "polyline",
        {
          points: points.join(" "),
          class: isBest ? "best" : "trial",
          stroke: isBest ? INK : shadeColour(shade),
          "stroke-dasharray": isBest ? "9 4" : null,
          "data-trial": trial.number,
        },
        svg("title", {}, `trial #${trial.number}: score ${num(trial.score)}`),
      ),
    );
  });
  drawing.append(lines);
  const edge = 4;
  axes.forEach((axis, i) => {
    const x = left + i * step;
    const g = svg("g", { class: "axis" });
    g.append(svg("line", { x1: x, x2: x, y1: top, y2: bottom }));
    // Names and tick labels fit between two axes (about 7 px a character), whole in tooltips.
    const room = Math.max(4, Math.floor((step || W) / 7) - 1);
    // The first and last names start and end at the drawing's edges, with room up to halfway to
    // the next axis: centred on their axis, 50 px from the edge, a long first name lost its
    // start off the drawing.
    const first = i === 0;
    const last = i === axes.length - 1 && !first;
    const span = axes.length === 1 ? W - 2 * edge : first || last ? left - edge + step / 2 : step;
    const name = svg("text", {
      x: first ? edge : last ? W - edge : x,
      y: top - 26,
      "text-anchor": first ? "start" : last ? "end" : "middle",
      class: "axis-name",
    }, shorten(axis.name, Math.max(4, Math.floor(span / 7) - 1)));
    g.append(named(axis.name, name));
    for (const [value, label] of axis.ticks) {
      g.append(named(label, svg("text", { x: x + 4, y: y(axis, value) + 4, class: "tick" }, shorten(label, room))));
    }
    drawing.append(g);
  });
  if (best) {
    drawing.append(svg("text", { x: W - left - 8, y: H - 4, "text-anchor": "end", class: "best-label" }, `thick dashed line: best trial #${best.number} (score ${num(best.score)})`));
  }
  el.replaceChildren(drawing);
  return { lines: done.length };
}

function axisFor(name, domain, values) {
  const present = values.filter((v) => v !== null && v !== undefined);
  const categorical = domain && ["categorical", "bool", "ordinal"].includes(domain.type);
  if (categorical || present.some((v) => typeof v !== "number")) {
    let levels = [...new Set(present.map(String))];
    if (domain && domain.type === "bool") levels = ["false", "true"];
    else if (domain && domain.choices) levels = domain.choices.map(String);
    const index = new Map(levels.map((v, i) => [v, i]));
    const span = Math.max(1, levels.length - 1);
    return {
      name,
      position: (v) => (levels.length === 1 ? 0.5 : (index.get(String(v)) ?? 0) / span),
      ticks: levels.length <= 12 ? levels.map((v) => [v, v]) : [],
    };
  }
  let low = domain && domain.low !== undefined ? domain.low : Math.min(...present);
  let high = domain && domain.high !== undefined ? domain.high : Math.max(...present);
  if (!Number.isFinite(low) || !Number.isFinite(high)) [low, high] = [0, 1];
  const span = high - low || 1;
  return {
    name,
    position: (v) => (v === null || v === undefined ? 0 : (v - low) / span),
    ticks: [[low, num(low, 3)], [high, num(high, 3)]],
  };
}

// Light to dark: a worse trial is paler, so order reads in greyscale too.
function shadeColour(t) {
  const light = [200, 215, 230];
  const dark = [20, 70, 140];
  const c = light.map((l, i) => Math.round(l + (dark[i] - l) * t));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// One small line per knob with an effect curve: the score the trials' model predicts at each
// value (partial dependence), values written under the points so categories read as well.
export function effectCurves(el, shares) {
  const curves = shares.filter((s) => s.effect && s.effect.length > 1);
  const width = 300;
  const height = 120;
  const pad = { l: 56, r: 28, t: 20, b: 30 };
  const drawings = curves.map((s) => {
    const ys = s.effect.map((p) => p.score);
    const lo = Math.min(...ys);
    const span = Math.max(...ys) - lo || 1;
    const x = (i) => pad.l + (i / (s.effect.length - 1)) * (width - pad.l - pad.r);
    const y = (v) => height - pad.b - ((v - lo) / span) * (height - pad.t - pad.b);
    const points = s.effect.map((p, i) => `${x(i).toFixed(1)},${y(p.score).toFixed(1)}`).join(" ");
    const drawing = svg("svg", {
      viewBox: `0 0 ${width} ${height}`,
      class: "effect",
      role: "img",
      "aria-label": `effect of ${s.knob}`,
    });
    // Value labels that would overlap the one before are left out (a long int range has
    // eight 9-digit values); each point keeps its value in its tooltip.
    let free = -Infinity;
    const labels = s.effect.map((p, i) => {
      const text = String(p.value);
      const half = (text.length * 6.5) / 2;
      if (x(i) - half < free) return null;
      free = x(i) + half + 4;
      return svg("text", { x: x(i), y: height - 10, "text-anchor": "middle" }, text);
    });
    drawing.append(
      named(s.knob, svg("text", { x: 4, y: 13, class: "title" }, `${shorten(s.knob, 30)}: predicted score`)),
      svg("text", { x: pad.l - 6, y: y(lo + span) + 4, "text-anchor": "end" }, num(lo + span)),
      svg("text", { x: pad.l - 6, y: y(lo) + 4, "text-anchor": "end" }, num(lo)),
      svg("polyline", { points, class: "line" }),
      ...s.effect.map((p, i) => svg("circle", { cx: x(i), cy: y(p.score), r: 3 }, svg("title", {}, `${p.value}: ${num(p.score)}`))),
      ...labels.filter(Boolean),
    );
    return drawing;
  });
  el.replaceChildren(...drawings);
  return drawings.length;
}
