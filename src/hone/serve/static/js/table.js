// A sortable, filterable table. A new row is built from one HTML string (fast with thousands of
// rows); a row still there at the next render keeps its elements and only its changed cells are
// written, as the pages render again on a timer or a stream: a row rebuilt under the user would
// drop a checkbox's focus, a click pressed across the render (down on the old box, up on its
// replacement is no click) and a text selection.
import { esc, h } from "./util.js";

// columns: [{key, label, value(row), text(row)?, numeric?, wrap?, cls(row)?, node(row)?}]; `wrap`
// lets a long name (a C++ template, a Java class path) break anywhere so the table fits its card;
// `node` fills the cell with an element (a link, a checkbox) made again only when the cell's
// text changes. Options: `key(row)`, a row's identity from one setRows to the next (default: the
// row object itself); `rowData(row)`, data-* attributes of its <tr>.
export class DataTable {
  constructor(container, columns, { filters = [], caption = "", rowClass = () => "", key = (row) => row, rowData = () => ({}) } = {}) {
    this.columns = columns;
    this.rows = [];
    this.key = key;
    this.rowData = rowData;
    this.shown = new Map(); // key -> the <tr> drawn for it
    this.nodeText = new WeakMap(); // a `node` cell -> the text its element was made for
    this.sortKey = null;
    this.sortDir = 1;
    this.query = "";
    this.filters = filters; // [{label, options:[[value,label]], test(row,value)}]
    this.filterValues = filters.map(() => "");
    this.rowClass = rowClass;
    this.count = h("span", { class: "count", "aria-live": "polite" });
    const search = h("input", {
      type: "search",
      placeholder: "filter rows…",
      "aria-label": "filter rows",
      class: "table-filter",
      oninput: (e) => {
        this.query = e.target.value.trim().toLowerCase();
        this.render();
      },
    });
    const selects = filters.map((f, i) =>
      h(
        "label",
        {},
        `${f.label} `,
        h(
          "select",
          {
            "aria-label": f.label,
            onchange: (e) => {
              this.filterValues[i] = e.target.value;
              this.render();
            },
          },
          f.options.map(([value, label]) => h("option", { value }, label)),
        ),
      ),
    );
    this.table = h("table", { class: "data" });
    if (caption) this.table.append(h("caption", {}, caption));
    this.head = h("thead");
    this.body = h("tbody");
    this.table.append(this.head, this.body);
    container.append(
      h("div", { class: "table-tools" }, search, ...selects, this.count),
      h("div", { class: "table-scroll" }, this.table),
    );
    this.renderHead();
  }

  renderHead() {
    const row = h("tr");
    for (const column of this.columns) {
      const sorted = this.sortKey === column.key;
      const arrow = sorted ? (this.sortDir > 0 ? " ▲" : " ▼") : "";
      row.append(
        h(
          "th",
          {
            scope: "col",
            class: column.numeric ? "num" : "",
            "aria-sort": sorted ? (this.sortDir > 0 ? "ascending" : "descending") : "none",
            "data-key": column.key,
          },
          h(
            "button",
            {
              type: "button",
              class: "sort",
              title: `sort by ${column.label}`,
              onclick: () => this.sortBy(column.key),
            },
            column.label + arrow,
          ),
        ),
      );
    }
    this.head.replaceChildren(row);
  }

  sortBy(key) {
    if (this.sortKey === key) this.sortDir = -this.sortDir;
    else {
      this.sortKey = key;
      this.sortDir = 1;
    }
    this.renderHead();
    this.render();
  }

  setRows(rows) {
    this.rows = rows;
    this.render();
  }

  visibleRows() {
    let rows = this.rows;
    this.filters.forEach((f, i) => {
      const value = this.filterValues[i];
      if (value) rows = rows.filter((r) => f.test(r, value));
    });
    if (this.query) {
      rows = rows.filter((r) =>
        this.columns.some((c) => String(c.text ? c.text(r) : c.value(r) ?? "").toLowerCase().includes(this.query)),
      );
    }
    if (this.sortKey) {
      const column = this.columns.find((c) => c.key === this.sortKey);
      const dir = this.sortDir;
      rows = [...rows].sort((a, b) => compare(column.value(a), column.value(b), dir));
    }
    return rows;
  }

  render() {
    const rows = this.visibleRows();
    const ids = rows.map((row) => this.key(row));
    const taken = new Set(); // a key met twice: its second row is a row of its own
    const trs = rows.map((row, i) => {
      const tr = taken.has(ids[i]) ? undefined : this.shown.get(ids[i]);
      taken.add(ids[i]);
      if (tr) this.update(tr, row);
      return tr;
    });
    const built = this.build(rows.filter((_, i) => !trs[i]));
    let next = 0;
    this.shown = new Map();
    trs.forEach((tr, i) => {
      if (!tr) trs[i] = built[next++];
      if (!this.shown.has(ids[i])) this.shown.set(ids[i], trs[i]);
    });
    const kept = new Set(trs);
    for (const tr of [...this.body.rows]) if (!kept.has(tr)) tr.remove();
    this.arrange(trs);
    this.count.textContent = `${rows.length} of ${this.rows.length} rows`;
  }

  // New rows, parsed from one string; their `node` cells filled after.
  build(rows) {
    if (!rows.length) return [];
    const parts = [];
    for (const row of rows) {
      const cls = this.rowClass(row);
      parts.push(cls ? `<tr class="${esc(cls)}">` : "<tr>");
      for (const column of this.columns) {
        const classes = cellClasses(column, row);
        const text = column.node ? "" : esc(cellText(column, row));
        parts.push(`<td${classes ? ` class="${esc(classes)}"` : ""}>${text}</td>`);
      }
      parts.push("</tr>");
    }
    const scratch = h("tbody");
    scratch.innerHTML = parts.join("");
    const trs = [...scratch.rows];
    rows.forEach((row, r) => {
      Object.assign(trs[r].dataset, this.rowData(row));
      this.columns.forEach((column, i) => {
        if (column.node) this.fillNode(trs[r].cells[i], column, row);
      });
    });
    return trs;
  }

  // A kept row: only what changed is written, so its elements and text stay.
  update(tr, row) {
    const cls = this.rowClass(row);
    if (tr.className !== cls) tr.className = cls;
    for (const [name, value] of Object.entries(this.rowData(row))) {
      if (tr.dataset[name] !== String(value)) tr.dataset[name] = value;
    }
    this.columns.forEach((column, i) => {
      const td = tr.cells[i];
      const classes = cellClasses(column, row);
      if (td.className !== classes) td.className = classes;
      if (column.node) {
        if (this.nodeText.get(td) !== cellText(column, row)) this.fillNode(td, column, row);
      } else {
        const text = cellText(column, row);
        if (td.textContent !== text) td.textContent = text;
      }
    });
  }

  fillNode(td, column, row) {
    td.replaceChildren(column.node(row));
    this.nodeText.set(td, cellText(column, row));
  }

  // Puts the rows in the body in this order, moving as few as it can (those outside a longest
  // run already in order): a moved row is out of the page for a moment, which drops the focus
  // and a selection inside it, so those are put back after.
  arrange(trs) {
    const at = new Map([...this.body.rows].map((tr, i) => [tr, i]));
    const stay = increasing(trs.map((tr) => at.get(tr) ?? -1));
    // (read only when a row on the page moves: reading the selection lays the page out)
    const putBack = stay.size < at.size ? holding(this.body) : () => {};
    let next = null;
    for (let i = trs.length - 1; i >= 0; i--) {
      if (!stay.has(i)) this.body.insertBefore(trs[i], next);
      next = trs[i];
    }
    putBack();
  }
}

// What the user holds in `box` (the focus, a selection starting there), and a function that
// gives it back once the elements are in the page again.
function holding(box) {
  const focused = document.activeElement;
  const selection = document.getSelection();
  const range = selection.rangeCount && box.contains(selection.anchorNode)
    ? [selection.anchorNode, selection.anchorOffset, selection.focusNode, selection.focusOffset]
    : null;
  return () => {
    if (focused !== document.activeElement && focused?.isConnected) focused.focus({ preventScroll: true });
    if (range && range[0].isConnected && range[2].isConnected && selection.anchorNode !== range[0]) {
      selection.setBaseAndExtent(...range);
    }
  };
}

function cellText(column, row) {
  return String((column.text ? column.text(row) : column.value(row)) ?? "");
}

function cellClasses(column, row) {
  const extra = column.cls ? column.cls(row) : "";
  return [column.numeric ? "num" : "", column.wrap ? "wrap" : "", extra].filter(Boolean).join(" ");
}

// The indices of a longest increasing run of `order` (-1: not in the page yet, never part of
// it), by patience sorting.
function increasing(order) {
  const tails = []; // tails[k]: the index ending the smallest-ended run of length k + 1
  const previous = new Array(order.length);
  order.forEach((value, i) => {
    if (value < 0) return;
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (order[tails[mid]] < value) low = mid + 1;
      else high = mid;
    }
    previous[i] = low > 0 ? tails[low - 1] : -1;
    tails[low] = i;
  });
  const run = new Set();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = previous[i]) run.add(i);
  return run;
}

// Missing values sort last whatever the direction of numbers and strings.
function compare(a, b, dir) {
  const missingA = a === null || a === undefined || a === "";
  const missingB = b === null || b === undefined || b === "";
  if (missingA || missingB) return missingA === missingB ? 0 : missingA ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return (a - b) * dir;
  return String(a).localeCompare(String(b), undefined, { numeric: true }) * dir;
}
