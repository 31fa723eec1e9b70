// `npm run bench:cpu [-- cycles] [--baseline=<ref>]`: the client's own CPU per cycle, fetch answered in-process
// (bench/cpu.ts).
import { cpuInProcess } from "./cpu.ts";
import { table } from "./stats.ts";

const cycles = Number(process.argv.slice(2).find((arg) => !arg.startsWith("--")) ?? 8_000);
const figures = await cpuInProcess({ nodeTimeout: 500, retryDelay: 200, retryJitter: 100 }, cycles);
const floor = figures.get("floor")!;
console.log(
  `fetch answered in-process; CPU µs per cycle (${cycles} one-lock cycles, ${cycles / 10} of 20 locks, ` +
    "4 interleaved rounds)\n",
);
console.log(
  table(
    ["impl", "1 lock µs", "× floor", "20 locks µs", "× floor"],
    [...figures].map(([name, f]) => [
      name,
      f.oneLockUs,
      f.oneLockUs / floor.oneLockUs,
      f.twentyLocksUs,
      f.twentyLocksUs / floor.twentyLocksUs,
    ]),
  ),
);
process.exit(0);
