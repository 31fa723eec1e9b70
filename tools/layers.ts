// The import rules of docs/ARCHITECTURE.md, checked: no import cycle between the files of src/, each
// folder imports only the folders below it, and only the files named here import an outside package.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

/** Which groups each group may import. A group is a folder of src/ or a file at its top. */
const MAY_IMPORT: Record<string, string[]> = {
  "support/": [],
  "scripts/": ["support/"],
  "quorum/rules.ts": [],
  "errors.ts": ["quorum/rules.ts", "scripts/"],
  "options.ts": ["support/", "events/"],
  "events/": ["errors.ts", "support/"],
  "check.ts": ["errors.ts", "options.ts", "support/"],
  "node/": ["scripts/", "support/", "errors.ts", "options.ts", "check.ts"],
  "quorum/": ["quorum/rules.ts", "node/", "scripts/", "events/", "support/", "errors.ts", "options.ts", "check.ts"],
  "lock/": [
    "quorum/",
    "quorum/rules.ts",
    "node/",
    "scripts/",
    "events/",
    "support/",
    "errors.ts",
    "options.ts",
    "check.ts",
  ],
  "fencing/": ["quorum/", "node/", "scripts/", "support/", "errors.ts", "options.ts"],
  "semaphore/": ["lock/", "quorum/", "node/", "scripts/", "events/", "support/", "errors.ts", "options.ts", "check.ts"],
  "rwlock/": [
    "lock/",
    "fencing/",
    "quorum/",
    "node/",
    "scripts/",
    "events/",
    "support/",
    "errors.ts",
    "options.ts",
    "check.ts",
  ],
  "redlock-mutex.ts": [
    "lock/",
    "fencing/",
    "events/",
    "quorum/",
    "node/",
    "scripts/",
    "support/",
    "errors.ts",
    "options.ts",
    "check.ts",
  ],
  "redlock.ts": ["redlock-mutex.ts", "lock/", "semaphore/", "rwlock/", "node/", "options.ts", "check.ts"],
  "mutex/": [
    "redlock-mutex.ts",
    "lock/",
    "fencing/",
    "events/",
    "node/",
    "scripts/",
    "support/",
    "errors.ts",
    "options.ts",
  ],
  "doctor/": ["redlock.ts", "node/", "scripts/", "quorum/rules.ts", "support/", "errors.ts", "options.ts", "check.ts"],
  "otel/": ["events/"],
  "hono/": [
    "redlock.ts",
    "redlock-mutex.ts",
    "lock/",
    "semaphore/",
    "node/",
    "support/",
    "errors.ts",
    "options.ts",
    "check.ts",
  ],
  "index.ts": [
    "mutex/",
    "redlock.ts",
    "events/",
    "lock/",
    "semaphore/",
    "rwlock/",
    "fencing/",
    "node/",
    "scripts/",
    "support/",
    "doctor/",
    "errors.ts",
    "options.ts",
  ],
  // Test helpers for the package's users (./testing, ./testing/memory): may use the whole library;
  // nothing imports them.
  "testing/": [
    "redlock.ts",
    "lock/",
    "semaphore/",
    "rwlock/",
    "fencing/",
    "quorum/",
    "quorum/rules.ts",
    "node/",
    "scripts/",
    "support/",
    "doctor/",
    "errors.ts",
    "options.ts",
    "check.ts",
  ],
};

/**
 * Files of src/ that may import files outside it, and which: the local nodes load the REST bridge and
 * redis-server control from dev/ (Node-side, shipped as dist/dev/), at run time only.
 */
const OUTSIDE: Record<string, (target: string) => boolean> = {
  "testing/local-nodes.ts": (target) =>
    ["../dev/cluster.ts", "../dev/cluster-process.ts", "../dev/redis-server.ts", "../dev/memory-cluster.ts"].includes(
      target,
    ),
};

/** Imports of another group that must be `import type` (quorum/ knows the shape of a script, never its Lua). */
const TYPES_ONLY: [string, string][] = [
  ["quorum/", "scripts/"],
  ["quorum/", "events/"],
  ["options.ts", "events/"],
];

/** The only files that may import each outside package; `node:` and anything else: none (web standards only). */
const PACKAGES: Record<string, (file: string) => boolean> = {
  "@upstash/redis": (file) => file === "node/upstash.ts",
  hono: (file) => file.startsWith("hono/"),
};

const src = join(new URL("..", import.meta.url).pathname, "src");
const files = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).sort();
const problems: string[] = [];
const graph = new Map<string, string[]>();

/** The group a file of src/ belongs to. */
function group(file: string): string {
  if (file === "quorum/rules.ts" || !file.includes("/")) return file;
  return `${file.split("/")[0]}/`;
}

for (const file of files) {
  const text = readFileSync(join(src, file), "utf8");
  const edges: string[] = [];
  const statements = /^(?:import|export)\s+(type\s+)?(?:[^;]*?\sfrom\s+)?"([^"]+)";|\bimport\(\s*"([^"]+)"\s*\)/gms;
  for (const match of text.matchAll(statements)) {
    const typeOnly = match[1];
    const specifier = match[2] ?? match[3];
    if (!specifier.startsWith(".")) {
      const pkg = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
      if (!PACKAGES[pkg]?.(file)) problems.push(`${file}: imports the package "${specifier}" (not allowed here)`);
      continue;
    }
    const target = normalize(relative(src, join(src, dirname(file), specifier)));
    if (target.startsWith("..")) {
      if (!OUTSIDE[file]?.(target)) problems.push(`${file}: imports ${target}, outside src/ (not allowed here)`);
      continue;
    }
    edges.push(target);
    const [from, to] = [group(file), group(target)];
    if (from === to) continue;
    if (!(MAY_IMPORT[from] ?? []).includes(to))
      problems.push(`${file}: imports ${target} (${from} may not import ${to})`);
    if (!typeOnly && TYPES_ONLY.some(([a, b]) => a === from && b === to)) {
      problems.push(`${file}: imports ${target} for more than its types (${from} may only import types from ${to})`);
    }
  }
  graph.set(file, edges);
}

// Cycles between files, by depth-first search.
const state = new Map<string, "open" | "done">();
function visit(file: string, path: string[]): void {
  if (state.get(file) === "done") return;
  if (state.get(file) === "open") {
    problems.push(`import cycle: ${[...path.slice(path.indexOf(file)), file].join(" → ")}`);
    return;
  }
  state.set(file, "open");
  for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
  state.set(file, "done");
}
for (const file of files) visit(file, []);

for (const problem of problems) console.error(problem);
console.log(`layers: ${files.length} files of src/, ${problems.length} problem(s)`);
process.exit(problems.length === 0 ? 0 : 1);
