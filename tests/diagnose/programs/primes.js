// A Node.js program whose time goes to one JavaScript function: counting primes by trial
// division, over and over, for the seconds given (default 60).
function countPrimesBelow(n) {
  let count = 0;
  for (let i = 2; i < n; i++) {
    let prime = true;
    for (let j = 2; j * j <= i; j++) {
      if (i % j === 0) {
        prime = false;
        break;
      }
    }
    if (prime) count++;
  }
  return count;
}

const end = Date.now() + 1000 * Number(process.argv[2] || 60);
let total = 0;
while (Date.now() < end) total += countPrimesBelow(20000);
console.log(total);
