// A sortable, filterable table built as one HTML string per render (fast with thousands of rows).
import { esc, h } from "./util.js";

// columns: [{key, label, value(row), text(row)?, numeric?, wrap?, cls(row)?}]; `wrap` lets a long
// name (a C++ template, a Java class path) break anywhere so the table fits its card.
export class DataTable {
  constructor(container, columns, { filters = [], caption = "", rowClass = () => "" } = {}) {
    this.columns = columns;
    this.rows = [];
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
    const parts = [];
    for (const row of rows) {
      const cls = this.rowClass(row);
      parts.push(cls ? `<tr class="${esc(cls)}">` : "<tr>");
      for (const column of this.columns) {
        const text = column.text ? column.text(row) : column.value(row);
        const extra = column.cls ? column.cls(row) : "";
        const classes = [column.numeric ? "num" : "", column.wrap ? "wrap" : "", extra].filter(Boolean).join(" ");
        parts.push(`<td${classes ? ` class="${classes}"` : ""}>${esc(text ?? "")}</td>`);
      }
      parts.push("</tr>");
    }
    this.body.innerHTML = parts.join("");
    this.count.textContent = `${rows.length} of ${this.rows.length} rows`;
  }
}

// Missing values sort last whatever the direction of numbers and strings.
function compare(a, b, dir) {
  const missingA = a === null || a === undefined || a === "";
  const missingB = b === null || b === undefined || b === "";
  if (missingA || missingB) return missingA === missingB ? 0 : missingA ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return (a - b) * dir;
  return String(a).localeCompare(String(b), undefined, { numeric: true }) * dir;
}
