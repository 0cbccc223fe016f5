// hone's web UI: hash routes, the token dialog and the page frame. Plain ES modules, no build.
import { get, onTokenRefused, setToken, token } from "./api.js";
import { comparePage } from "./compare.js";
import { studiesPage } from "./studies.js";
import { studyPage } from "./study.js";
import { h, message } from "./util.js";

const main = document.getElementById("main");
const extraPages = {}; // filled by optional modules (diagnoses, machine) when the server has them
let leaving = [];
let shown = 0; // the number of the route on screen
let about = { capabilities: ["studies"], reads_open: true };

// The page and its argument as links write them (each name percent-encoded), split before
// decoding: a name may hold a '/' or a ',' (A-Tune project names are free text), and decoding
// first cut such a name in two.
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const cut = raw.indexOf("/");
  return cut < 0 ? [decode(raw), ""] : [decode(raw.slice(0, cut)), raw.slice(cut + 1)];
}

// A stray '%' in a typed address is taken as written rather than stopping the page.
function decode(text) {
  try {
    return decodeURIComponent(text);
  } catch (_) {
    return text;
  }
}

// Each route draws into a view of its own. A page left (back, forward, a link) before its data
// came goes on drawing into its view, which is no longer on screen, instead of under the page
// shown now; what it starts after that (an event stream, a timer) is stopped at once.
async function route() {
  for (const fn of leaving) fn();
  leaving = [];
  const number = ++shown;
  const onLeave = (fn) => (number === shown ? leaving.push(fn) : fn());
  const view = h("div", { class: "view" });
  main.replaceChildren(view);
  delete document.body.dataset.ready;
  const [page, arg] = parseHash();
  for (const link of document.querySelectorAll("nav a")) {
    link.toggleAttribute("aria-current", link.dataset.page === (page || "studies"));
  }
  try {
    if (!page || page === "studies") await studiesPage(view, { onLeave });
    else if (page === "study") await studyPage(view, decode(arg), { onLeave });
    else if (page === "compare") await comparePage(view, arg.split(",").filter(Boolean).map(decode));
    else if (extraPages[page]) await extraPages[page](view, decode(arg), { onLeave });
    else message(view, `no page ${page}`, "error");
  } catch (error) {
    message(view, error.message, "error");
  }
}

function tokenDialog() {
  const input = h("input", { type: "password", autocomplete: "off", "aria-label": "token", size: 48 });
  const problem = h("p", { class: "message error", id: "token-problem", role: "alert", hidden: true });
  const dialog = h(
    "dialog",
    { id: "token-dialog" },
    h("form", { method: "dialog" },
      h("h2", {}, "Server token"),
      problem,
      h("p", {}, "Changing anything (start, stop, resume, restore, applying a profile) needs the token that hone serve printed at its first start (also in its state directory, serve/token). It stays in this tab only."),
      input,
      h("menu", {},
        h("button", { value: "save", onclick: () => { setToken(input.value); updateTokenButton(); } }, "Use token"),
        h("button", { value: "forget", onclick: () => { setToken(""); input.value = ""; updateTokenButton(); } }, "Forget"),
        h("button", { value: "cancel" }, "Close"),
      ),
    ),
  );
  document.body.append(dialog);
  // A refused token: say why, take a new one, and let the refused request be sent again.
  onTokenRefused((error) => {
    problem.textContent = error.status === 403
      ? "The server refused the token: it is wrong. Enter it again; what you asked for is then sent again."
      : "This needs the server's token. Enter it; what you asked for is then sent.";
    problem.hidden = false;
    input.value = "";
    if (!dialog.open) {
      dialog.returnValue = ""; // Escape closes without setting it: a save from before must not count
      dialog.showModal();
    }
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => {
        problem.hidden = true;
        resolve(dialog.returnValue === "save" && Boolean(token()));
      }, { once: true });
    });
  });
  return dialog;
}

function updateTokenButton() {
  const button = document.getElementById("token-button");
  button.textContent = token() ? "Token set ✔" : "Set token";
}

async function start() {
  const dialog = tokenDialog();
  document.getElementById("token-button").addEventListener("click", () => dialog.showModal());
  updateTokenButton();
  window.addEventListener("hashchange", route);
  // The built-in pages do not wait for the optional modules to load.
  const first = parseHash()[0];
  const builtIn = ["", "studies", "study", "compare"].includes(first);
  const routed = builtIn ? route() : null;
  try {
    about = await get("/api/about");
  } catch (_) {
    /* reads may need the token: the pages say so */
  }
  document.getElementById("version").textContent = about.version ? `hone ${about.version}` : "";
  const nav = document.querySelector("nav ul");
  for (const name of ["diagnoses", "machine"]) {
    if (!(about.capabilities || []).includes(name)) continue;
    try {
      const module = await import(`./${name}.js`);
      extraPages[name] = module.page;
      Object.assign(extraPages, module.subpages || {});
      nav.append(h("li", {}, h("a", { href: `#/${name}`, "data-page": name }, name[0].toUpperCase() + name.slice(1))));
    } catch (error) {
      console.error(error);
    }
  }
  if (!about.reads_open && !token()) dialog.showModal();
  await (routed || route());
}

start();
