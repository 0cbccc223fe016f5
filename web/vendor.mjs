// Copy the npm packages the UI uses into hone's static folder, so that hone serve needs no
// Node at run time: `cd web && npm ci && npm run vendor`, then commit static/vendor/.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const target = join(here, "..", "src", "hone", "serve", "static", "vendor", "uplot");
const source = join(here, "node_modules", "uplot");
mkdirSync(target, { recursive: true });
for (const [from, to] of [
  ["dist/uPlot.esm.js", "uPlot.esm.js"],
  ["dist/uPlot.min.css", "uPlot.min.css"],
  ["LICENSE", "LICENSE.txt"],
]) {
  copyFileSync(join(source, from), join(target, to));
  console.log(`vendored ${from} -> ${join(target, to)}`);
}
