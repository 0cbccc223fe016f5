// Small DOM and formatting helpers shared by the pages.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) el.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) {
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return el;
}

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// `digits` significant digits, but the whole part always in full and trailing zeros only cut
// after a decimal point: toPrecision wrote 39.5 at 2 digits as "40" (cut to "4") and 234.5 as
// "2.3e+2".
export function num(value, digits = 4) {
  if (value === null || value === undefined || Number.isNaN(value)) return "";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value) || !Number.isFinite(value)) return String(value);
  const size = Math.abs(value);
  if (size >= 1e21 || size < 1e-6) return value.toPrecision(digits);
  const whole = Math.floor(Math.log10(size)) + 1;
  const text = value.toFixed(Math.min(100, Math.max(0, digits - whole)));
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}

// A name cut in the middle to at most `max` characters: knob names often share a long prefix
// (net.ipv4.tcp_...) and differ at the end, so both ends are kept.
export function shorten(text, max) {
  const value = String(text);
  if (value.length <= max) return value;
  const tail = Math.floor((max - 1) / 2);
  return `${value.slice(0, max - 1 - tail)}…${value.slice(value.length - tail)}`;
}

export function pct(value, half) {
  if (value === null || value === undefined) return "";
  const sign = value >= 0 ? "+" : "−";
  const text = `${sign}${Math.abs(value).toFixed(1)} %`;
  return half === null || half === undefined ? text : `${text} ± ${half.toFixed(1)} %`;
}

// A confirmed gain with its interval: `± half-width` when symmetric, else both ends (a gain in
// % of the baseline is a mean of log ratios, whose interval is wider above than below).
export function gainPct(value, low, high) {
  const text = pct(value);
  if (!text || low === null || low === undefined || high === null || high === undefined) return text;
  const below = (value - low).toFixed(1);
  const above = (high - value).toFixed(1);
  return below === above ? `${text} ± ${below} %` : `${text} (${pct(low)} to ${pct(high)})`;
}

// The best search trial's gain, saying so when its configuration holds risky values the run
// held back (they need --allow-risk): that gain is not one the study applied or would apply.
export function bestSeen(row) {
  const gain = pct(row.best_gain);
  const held = row.best_held_back || [];
  return gain && held.length ? `${gain} (risky, held back: ${held.join(", ")})` : gain;
}

export function when(value) {
  if (!value) return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

// State shown with a symbol and a word, never by colour alone.
const STATES = {
  running: ["▶", "running"],
  finished: ["✔", "finished"],
  failed: ["✖", "failed"],
  interrupted: ["‖", "interrupted"],
  complete: ["✔", "complete"],
  fail: ["✖", "failed"],
};

export function stateBadge(state, alive) {
  const [symbol, word] = STATES[state] || ["?", state];
  const stale = state === "running" && alive === false;
  return h(
    "span",
    { class: `state state-${state}${stale ? " stale" : ""}`, title: stale ? "its process is gone" : word },
    `${symbol} ${word}${stale ? " (stale)" : ""}`,
  );
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function message(el, text, kind = "info") {
  clear(el).append(h("p", { class: `message ${kind}`, role: kind === "error" ? "alert" : "status" }, text));
}

// Marks the page ready (what the tests and a person's script wait for), unless `el` is no longer
// on screen: a page left before it finished must not claim the page shown now.
export function ready(el, name) {
  if (el.isConnected) document.body.dataset.ready = name;
}
