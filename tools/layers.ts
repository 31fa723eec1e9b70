// The import rules of docs/ARCHITECTURE.md, checked: no import cycle between the files of src/ and of the
// Node-side folders around it, each folder imports only the folders below it, and only the files named here
// import an outside package.
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
    "fencing/",
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
  // The in-memory node: Redis with the semantics of the library's scripts, for tests and `dev --memory`.
  "memory/": ["node/", "scripts/"],
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
  // nothing in src/ imports them, and neither does dev/ (src/testing loads dev/: see NODE_SIDE).
  "testing/": [
    "memory/",
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
 * Files of src/ that may import files outside it, and which: the Node-side entry of src/testing loads the
 * REST bridge and redis-server control from dev/ (shipped as dist/dev/), by dynamic import only, so that
 * importing `edge-redlock/testing` loads no Redis client. dev/ never imports src/testing back.
 */
const OUTSIDE: Record<string, (target: string) => boolean> = {
  "testing/local-nodes.ts": (target) =>
    [
      "../dev/cluster.ts",
      "../dev/cluster-process.ts",
      "../dev/redis-server.ts",
      "../dev/memory-cluster.ts",
      "../dev/dev-vars.ts",
    ].includes(target),
};

/** The folder of src/ that loads dev/ (`edge-redlock/testing`): dev/ depends on the library, never on it. */
const TESTING = "src/testing/";

/**
 * The Node-side folders around src/, lowest first, and the folders each may import. dev/ (the test bed)
 * uses the library (the memory node included), never src/testing, which loads dev/; cli/ (the bin) sits on
 * both; bench/, chaos/ and tools/ on top, imported by nothing.
 */
const NODE_SIDE: Record<string, string[]> = {
  dev: ["src", "dev"],
  cli: ["src", "dev", "cli"],
  bench: ["src", "dev", "bench"],
  chaos: ["src", "dev", "chaos"],
  tools: ["tools"],
};

/** dev/ and cli/ ship in the package: they may import Node's own modules and the peer dependencies only. */
const SHIPPED_PACKAGES = ["ioredis", "@upstash/redis"];

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

const root = new URL("..", import.meta.url).pathname;
const src = join(root, "src");
const tsFiles = (dir: string) =>
  (readdirSync(join(root, dir), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(dir, f))
    .sort();
const files = tsFiles("src").map((f) => relative("src", f));
const outside = Object.keys(NODE_SIDE).flatMap(tsFiles);
const problems: string[] = [];
/** Every file's imports of other scanned files, by path from the repository root. */
const graph = new Map<string, string[]>();

/** The group a file of src/ belongs to. */
function group(file: string): string {
  if (file === "quorum/rules.ts" || !file.includes("/")) return file;
  return `${file.split("/")[0]}/`;
}

/** The package a bare specifier names (`@scope/name` or `name`). */
function packageOf(specifier: string): string {
  return specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
}

/** Each import of a file: its specifier, whether it is `import type`, whether it is a dynamic `import()`. */
function* importsOf(text: string): Generator<{ specifier: string; typeOnly: boolean; dynamic: boolean }> {
  const statements = /^(?:import|export)\s+(type\s+)?(?:[^;]*?\sfrom\s+)?"([^"]+)";|\bimport\(\s*"([^"]+)"\s*\)/gms;
  for (const match of text.matchAll(statements)) {
    yield { specifier: match[2] ?? match[3], typeOnly: match[1] !== undefined, dynamic: match[3] !== undefined };
  }
}

for (const file of files) {
  const text = readFileSync(join(src, file), "utf8");
  const edges: string[] = [];
  for (const { specifier, typeOnly, dynamic } of importsOf(text)) {
    if (!specifier.startsWith(".")) {
      if (!PACKAGES[packageOf(specifier)]?.(file))
        problems.push(`${file}: imports the package "${specifier}" (not allowed here)`);
      continue;
    }
    const target = normalize(relative(src, join(src, dirname(file), specifier)));
    if (target.startsWith("..")) {
      if (!OUTSIDE[file]?.(target)) problems.push(`${file}: imports ${target}, outside src/ (not allowed here)`);
      else if (!dynamic) problems.push(`${file}: imports ${target} statically (only \`import()\` at run time)`);
      edges.push(normalize(join("src", target)));
      continue;
    }
    edges.push(join("src", target));
    const [from, to] = [group(file), group(target)];
    if (from === to) continue;
    if (!(MAY_IMPORT[from] ?? []).includes(to))
      problems.push(`${file}: imports ${target} (${from} may not import ${to})`);
    if (!typeOnly && TYPES_ONLY.some(([a, b]) => a === from && b === to)) {
      problems.push(`${file}: imports ${target} for more than its types (${from} may only import types from ${to})`);
    }
  }
  graph.set(join("src", file), edges);
}

for (const file of outside) {
  const folder = file.split("/")[0];
  const text = readFileSync(join(root, file), "utf8");
  const edges: string[] = [];
  for (const { specifier } of importsOf(text)) {
    if (!specifier.startsWith(".")) {
      const shipped = folder === "dev" || folder === "cli";
      if (shipped && !specifier.startsWith("node:") && !SHIPPED_PACKAGES.includes(packageOf(specifier)))
        problems.push(`${file}: imports the package "${specifier}" (${folder}/ ships: Node's modules and peers only)`);
      continue;
    }
    const target = normalize(join(dirname(file), specifier));
    const to = target.split("/")[0];
    edges.push(target);
    if (!NODE_SIDE[folder].includes(to)) problems.push(`${file}: imports ${target} (${folder}/ may not import ${to}/)`);
    else if (folder === "dev" && target.startsWith(TESTING))
      problems.push(`${file}: imports ${target} (src/testing loads dev/, never the reverse)`);
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
for (const file of graph.keys()) visit(file, []);

for (const problem of problems) console.error(problem);
console.log(
  `layers: ${files.length} files of src/, ${outside.length} of ${Object.keys(NODE_SIDE).join("/, ")}/, ` +
    `${problems.length} problem(s)`,
);
process.exit(problems.length === 0 ? 0 : 1);
