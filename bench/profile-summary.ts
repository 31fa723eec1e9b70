// `node bench/profile-summary.ts DIR`: the newest .cpuprofile in DIR (from `npm run bench:profile`), its busy
// time by where the code lives (the library's files, @upstash/redis, undici, Node internals, GC) and the
// heaviest functions by self time.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const dir = process.argv[2] ?? ".tmp/prof";
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".cpuprofile"))
  .map((f) => join(dir, f));
const file = files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const where = (url: string) => {
  if (!url) return "(native / VM)";
  if (url.includes("/src/")) return `library src/${url.split("/src/")[1]}`;
  if (url.includes("@upstash/redis")) return "@upstash/redis";
  if (url.includes("undici")) return "undici (fetch)";
  if (url.includes("/bench/")) return "bench";
  if (url.startsWith("node:")) return url.split("/").slice(0, 3).join("/");
  return url.replace(/.*node_modules\//, "").split("/")[0];
};
const byPlace = new Map<string, number>();
const byFunction = new Map<string, number>();
let busy = 0;
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  if (functionName === "(idle)") continue;
  busy += us;
  const place = functionName.startsWith("(") ? functionName : where(url);
  byPlace.set(place, (byPlace.get(place) ?? 0) + us);
  const fn = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
}
const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${((100 * us) / busy).toFixed(1).padStart(5)} %  ${k}`)
    .join("\n");
console.log(
  `${file}: ${(busy / 1000).toFixed(0)} ms busy\n\nby place\n${top(byPlace, 20)}\n\n` +
    `by function (self)\n${top(byFunction, 25)}`,
);
