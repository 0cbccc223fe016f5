// hone flame graph: hover details and tooltip, search, click to zoom, icicle and reversed views.
// The SVG arrives fully drawn; this script only moves, relabels, hides and highlights frames.
// Each frame is <g data-n=name data-x=start data-w=width data-d=depth><rect/><text/></g>
// (no <text> when too narrow for a label),
// start and width in samples; the svg's data-config holds the layout constants.
(function () {
  "use strict";
  const script = document.currentScript;
  const svg = (script && script.closest("svg")) || document.querySelector("svg.hone-flamegraph");
  if (!svg) return;
  const cfg = JSON.parse(svg.getAttribute("data-config"));
  const inner = cfg.width - 2 * cfg.pad;
  const $ = (selector) => svg.querySelector(selector);
  const details = $(".details");
  const matched = $(".matched");
  const tip = $(".tip");
  const tipRect = tip.querySelector("rect");
  const tipText = tip.querySelector("text");
  const groups = { normal: $(".frames.normal"), reversed: $(".frames.reversed") };
  const cache = new Map();
  const byElement = new WeakMap();

  const state = { view: "normal", icicle: false, zoom: null, pattern: null };

  function frames(view) {
    if (!cache.has(view)) {
      const list = [];
      for (const g of groups[view].children) {
        const f = {
          g: g,
          rect: g.firstElementChild,
          text: g.querySelector("text"),
          name: g.getAttribute("data-n"),
          x: +g.getAttribute("data-x"),
          w: +g.getAttribute("data-w"),
          d: +g.getAttribute("data-d"),
          module: g.getAttribute("data-m"),
          before: g.hasAttribute("data-b") ? +g.getAttribute("data-b") : null,
          change: g.hasAttribute("data-c") ? +g.getAttribute("data-c") : null,
        };
        byElement.set(g, f);
        list.push(f);
      }
      cache.set(view, list);
    }
    return cache.get(view);
  }

  function label(name, width) {
    const chars = Math.floor((width - 6) / cfg.char);
    if (chars < 3) return "";
    return name.length <= chars ? name : name.slice(0, chars - 2) + "..";
  }

  function percent(value) {
    return (100 * value).toFixed(2).replace(/\.?0+$/, "") + " %";
  }

  // Place every frame of the current view for the zoom and orientation.
  function draw() {
    layout();
    buttons();
    highlight();
  }

  function buttons() {
    $(".button.reset").classList.toggle("off", state.zoom === null);
    $(".button.icicle").textContent = state.icicle ? "Flame" : "Icicle";
    $(".button.reverse").textContent = state.view === "reversed" ? "Normal" : "Reversed";
  }

  function layout() {
    const zoom = state.zoom;
    const start = zoom ? zoom.x : 0;
    const span = zoom ? zoom.w : cfg.total || 1;
    const scale = inner / span;
    for (const f of frames(state.view)) {
      const outside = zoom && (f.x + f.w <= zoom.x || f.x >= zoom.x + zoom.w);
      if (outside || (zoom && f.d > zoom.d && f.w * scale < 0.05)) {
        f.g.style.display = "none";
        continue;
      }
      f.g.style.display = "";
      const ancestor = zoom !== null && f.d < zoom.d;
      f.g.classList.toggle("ancestor", ancestor);
      const left = ancestor ? cfg.pad : cfg.pad + (f.x - start) * scale;
      const width = ancestor ? inner : f.w * scale;
      const top = state.icicle
        ? cfg.top + f.d * cfg.frame
        : cfg.bottom - (f.d + 1) * cfg.frame;
      f.rect.setAttribute("x", left.toFixed(2));
      f.rect.setAttribute("width", width.toFixed(2));
      f.rect.setAttribute("y", top);
      const text = label(f.name, width);
      if (text && !f.text) {
        f.text = document.createElementNS("http://www.w3.org/2000/svg", "text");
        f.g.appendChild(f.text);
      }
      if (f.text) {
        f.text.setAttribute("x", (left + 3).toFixed(2));
        f.text.setAttribute("y", top + cfg.frame - 4);
        f.text.textContent = text;
      }
    }
  }

  // Mark frames whose name matches; the matched share counts each sample once.
  function highlight() {
    const list = frames(state.view);
    const spans = [];
    for (const f of list) {
      const hit = state.pattern !== null && state.pattern.test(f.name) && f.d > 0;
      f.g.classList.toggle("hit", hit);
      if (hit) spans.push([f.x, f.x + f.w]);
    }
    $(".button.clear").classList.toggle("off", state.pattern === null);
    if (state.pattern === null) {
      matched.textContent = " ";
      return;
    }
    spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    let covered = 0;
    let end = -1;
    for (const [from, to] of spans) {
      if (to <= end) continue;
      covered += to - Math.max(from, end);
      end = to;
    }
    matched.textContent = "Matched: " + percent(covered / (cfg.total || 1));
  }

  function describe(f) {
    const share = f.w / (cfg.total || 1);
    const where = f.module && f.module !== "[thread]" ? " [" + f.module + "]" : "";
    let text = f.name + where + " (" + f.w.toLocaleString() + " " + cfg.unit + ", " +
      percent(share) + ")";
    if (f.before !== null) {
      const sign = f.change >= 0 ? "+" : "";
      text += ", was " + percent(f.before) + ", self " + sign + (100 * f.change).toFixed(2) +
        " points";
    }
    return text;
  }

  function showTip(f, event) {
    tipText.textContent = describe(f);
    tip.style.display = "";
    const box = svg.getBoundingClientRect();
    const sx = cfg.width / box.width;
    let x = (event.clientX - box.left) * sx + 12;
    let y = (event.clientY - box.top) * sx + 22;
    const width = tipText.getComputedTextLength() + 12;
    if (x + width > cfg.width) x = Math.max(0, cfg.width - width);
    if (y + 8 > cfg.bottom + 20) y -= 40;
    tipRect.setAttribute("x", x);
    tipRect.setAttribute("y", y - 14);
    tipRect.setAttribute("width", width);
    tipRect.setAttribute("height", 20);
    tipText.setAttribute("x", x + 6);
    tipText.setAttribute("y", y);
  }

  function frameOf(event) {
    const g = event.target.closest ? event.target.closest(".frames > g") : null;
    if (!g) return null;
    frames(state.view);
    return byElement.get(g) || null;
  }

  for (const group of Object.values(groups)) {
    group.addEventListener("mousemove", (event) => {
      const f = frameOf(event);
      if (!f) return;
      details.textContent = describe(f);
      showTip(f, event);
    });
    group.addEventListener("mouseleave", () => {
      tip.style.display = "none";
      details.textContent = " ";
    });
    group.addEventListener("click", (event) => {
      const f = frameOf(event);
      if (!f) return;
      state.zoom = f.d === 0 || (state.zoom && state.zoom.g === f.g) ? null : f;
      draw();
    });
  }

  function search(text) {
    if (text === null) return;
    if (text === "") {
      state.pattern = null;
    } else {
      try {
        state.pattern = new RegExp(text);
      } catch (error) {
        state.pattern = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
      }
    }
    highlight();
  }

  function on(cls, action) {
    $(".button." + cls).addEventListener("click", action);
  }
  on("reset", () => {
    state.zoom = null;
    draw();
  });
  on("search", () => search(window.prompt("Search frames (regular expression)", "")));
  on("clear", () => search(""));
  on("icicle", () => {
    state.icicle = !state.icicle;
    draw();
  });
  on("reverse", () => {
    groups[state.view].style.display = "none";
    state.view = state.view === "normal" ? "reversed" : "normal";
    groups[state.view].style.display = "";
    state.zoom = null;
    draw();
  });
  // Keys go to the graph the mouse was last over (a page may hold several).
  if (!window.honeFlamegraphActive || !window.honeFlamegraphActive.isConnected) {
    window.honeFlamegraphActive = svg;
  }
  svg.addEventListener("mouseenter", () => {
    window.honeFlamegraphActive = svg;
  });
  window.addEventListener("keydown", (event) => {
    if (!svg.isConnected) return; // a page replaced this graph with another one
    if (window.honeFlamegraphActive !== svg) return;
    if ((event.ctrlKey || event.metaKey) && event.key === "f") {
      event.preventDefault();
      search(window.prompt("Search frames (regular expression)", ""));
    } else if (event.key === "Escape") {
      state.zoom = null;
      state.pattern = null;
      draw();
    }
  });
  // Hooks for pages that embed the graph (and for tests): search, zoom by name, views.
  svg.honeFlamegraph = {
    search: search,
    zoom(name) {
      state.zoom = frames(state.view).find((f) => f.name === name && f.d > 0) || null;
      draw();
    },
    toggleIcicle() {
      $(".button.icicle").dispatchEvent(new MouseEvent("click"));
    },
    toggleReversed() {
      $(".button.reverse").dispatchEvent(new MouseEvent("click"));
    },
    state: state,
  };
  // The SVG arrives laid out for this state: only the buttons need it.
  buttons();
  highlight();
})();
