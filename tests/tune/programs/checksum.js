// A benchmark for `hone tune --why`: in mode `slow` (the default) each checksum runs a needless
// inner loop, in mode `fast` it does not. Prints how many checksums fit in 0.4 s.
const fs = require("fs");

function slowChecksum(n) {
  let sum = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < 50; j++) sum = (sum + i * j) % 1000003;
  return sum;
}

function fastChecksum(n) {
  let sum = 0;
  for (let i = 0; i < n; i++) sum = (sum + i * 1225) % 1000003;
  return sum;
}

let mode = "slow";
try {
  mode = fs.readFileSync(process.argv[2], "utf8").trim();
} catch (error) {}
const work = mode === "fast" ? fastChecksum : slowChecksum;
const end = Date.now() + 400;
let ops = 0;
while (Date.now() < end) {
  work(20000);
  ops++;
}
console.log(`ops ${ops}`);
