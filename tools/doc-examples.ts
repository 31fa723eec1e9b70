// `node tools/doc-examples.ts [--all] [--no-prelude] [--prelude=<file.d.ts>] [--report=<file.md>]` (part of
// `npm run lint`): type-checks the ```ts examples in the JSDoc of the package's entries (jsr.json's exports, and
// the npm package's ./testing) and of every file of src/ they import, with `deno check --doc-only`, as a reader
// would paste them: `edge-redlock/…` resolves to src/, and each example sees the exports of its own file (deno's
// rule). An example that is not TypeScript at all (a value shown as a literal) is reported as such and left out
// of the check, since one would stop deno's whole run.
// The prelude declares the placeholders examples use without defining (`env`, `redlock`, `url`…) as globals, so
// an example's own declaration of the same name shadows it. Prints each failing example as file:line (the line
// of its opening fence), whether its symbol is public, and why; exits 1 when any fails, 2 when deno cannot run.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { transformSync } from "esbuild";

const root = new URL("..", import.meta.url).pathname;
const work = join(root, ".tmp", "doc-examples");
const args = process.argv.slice(2);
const option = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);

/** What examples may use without declaring it: the values a reader has at hand where the example runs. */
const PRELUDE = `// The placeholders of the examples, as globals: an example's own declaration shadows them.
/** A Worker's bindings, as its \`Env\` interface types them. */
declare const env: Record<string, string>;
/** One database's REST URL and token. */
declare const url: string;
declare const token: string;
/** The lock's nodes: five \`{ url, token }\`. */
declare const nodes: import("edge-redlock").NodeConfig[];
declare const redlock: import("edge-redlock").Redlock;
declare const lock: import("edge-redlock").Lock;
declare const semaphore: import("edge-redlock").Semaphore;
/** A lock's value (a script's ARGV[1]). */
declare const value: string;
declare const signal: AbortSignal;
/** A Worker's ExecutionContext (its fetch handler's third argument). */
declare const ctx: { waitUntil(promise: Promise<unknown>): void };
/** An \`@upstash/redis\` client of the database that holds the data (or a node, for the scripts). */
declare const redis: import("@upstash/redis").Redis;
declare const app: import("hono").Hono<{ Bindings: Record<string, string | undefined> }>;
declare const tracer: import("edge-redlock/otel").OtelTracer;
declare const meter: import("edge-redlock/otel").OtelMeter;
declare const trace: { getTracer(name: string): import("edge-redlock/otel").OtelTracer };
declare const metrics: { getMeter(name: string): import("edge-redlock/otel").OtelMeter };
`;

type Jsr = { exports: Record<string, string> };
const jsr = JSON.parse(readFileSync(join(root, "jsr.json"), "utf8")) as Jsr;
/** The package's entries: jsr.json's, and the npm package's Node-side ./testing (not on JSR). */
const exported = { ...jsr.exports, "./testing": "./src/testing/index.ts" };
const entries = Object.values(exported).map((path) => normalize(path));
/** The package's own names, as a reader imports them, mapped to the sources. */
const selfImports = Object.fromEntries(
  Object.entries(exported).map(([name, path]) => [`edge-redlock${name.slice(1)}`, `./${normalize(path)}`]),
);

/** The files of src/ that `starts` import, transitively (relative imports only; dev/ is not src/). */
function moduleGraph(starts: string[]): string[] {
  const seen = new Set<string>();
  const queue = [...starts];
  const statements =
    /^(?:import|export)\s+(?:type\s+)?(?:[^;]*?\sfrom\s+)?"(\.[^"]+)";|\bimport\(\s*"(\.[^"]+)"\s*\)/gms;
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file) || !file.startsWith("src/")) continue;
    seen.add(file);
    for (const match of readFileSync(join(root, file), "utf8").matchAll(statements)) {
      queue.push(normalize(join(dirname(file), match[1] ?? match[2])));
    }
  }
  return [...seen].sort();
}

interface Example {
  file: string;
  /** The line of the opening fence, 1-based. */
  line: number;
  code: string;
  /** The declaration the JSDoc documents, as written ("(module)" for a file's own doc). */
  symbol: string;
  /** The first line of that declaration, 1-based (0 for a module doc). */
  declLine: number;
  errors: string[];
}

/** The ```ts blocks of every JSDoc comment of `file`. */
function examplesOf(file: string): Example[] {
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  const found: Example[] = [];
  let docStart = -1;
  let open: { line: number; code: string[] } | undefined;
  let pending: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (docStart < 0 && /^\s*\/\*\*/.test(line)) docStart = i;
    if (docStart < 0) continue;
    const text = line.replace(/^\s*(?:\/\*\*|\*\/|\*)\s?/, "");
    if (open) {
      if (/^```\s*$/.test(text.trim())) {
        pending.push({ file, line: open.line, code: open.code.join("\n"), symbol: "", declLine: 0, errors: [] });
        open = undefined;
      } else open.code.push(text);
    } else if (/^```(?:ts|typescript)\s*$/.test(text.trim())) open = { line: i + 1, code: [] };
    if (line.includes("*/")) {
      const isModule = lines.slice(docStart, i + 1).some((l) => /@module\b/.test(l));
      let next = i + 1;
      while (next < lines.length && lines[next].trim() === "") next++;
      const symbol = isModule ? "(module)" : declaredName(lines[next] ?? "");
      for (const example of pending) found.push({ ...example, symbol, declLine: isModule ? 0 : next + 1 });
      pending = [];
      docStart = -1;
    }
  }
  return found;
}

/** The name a declaration line declares: `export class Lock`, `acquire(`, `readonly held:`, `get value()`. */
function declaredName(line: string): string {
  const words = "export|declare|default|abstract|async|public|private|protected|static|readonly|override|get|set";
  const modifiers = String.raw`(?:(?:${words})\s+)*`;
  const keyword = String.raw`(?:function\*?|class|interface|type|const|let|var|enum|namespace)\s+`;
  const declaration = new RegExp(String.raw`^\s*${modifiers}${keyword}([\w$]+)`).exec(line);
  if (declaration) return declaration[1];
  const member = new RegExp(String.raw`^\s*${modifiers}\*?(\[?[#\w$.]+\]?)\s*[?!]?\s*[(<:=;]`).exec(line);
  return member ? member[1] : line.trim().slice(0, 40);
}

/** file:line of every declaration (and member) the entries make public, from `deno doc --json`. */
function publicDeclarations(deno: string, env: NodeJS.ProcessEnv): Set<string> {
  const result = spawnSync(deno, ["doc", "--json", ...entries], { cwd: work, env, encoding: "utf8" });
  const publicLines = new Set<string>();
  if (result.status !== 0) return publicLines;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === "object") {
      const location = (value as { location?: { filename: string; line: number } }).location;
      if (location?.filename.startsWith("file://")) {
        const file = relative(work, new URL(location.filename).pathname);
        publicLines.add(`${file}:${location.line + 1}`); // deno doc counts lines from 0
      }
      for (const inner of Object.values(value)) visit(inner);
    }
  };
  visit(JSON.parse(result.stdout));
  return publicLines;
}

const started = performance.now();
const files = args.includes("--all")
  ? (readdirSync(join(root, "src"), { recursive: true }) as string[])
      .filter((file) => file.endsWith(".ts"))
      .map((file) => join("src", file))
      .sort()
  : moduleGraph(entries).filter((file) => file.endsWith(".ts"));
const examples = files.flatMap(examplesOf);

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
cpSync(join(root, "src"), join(work, "src"), { recursive: true });
symlinkSync(join(root, "node_modules"), join(work, "node_modules"));
const preludeFile = option("prelude");
const prelude = args.includes("--no-prelude") ? undefined : preludeFile ? readFileSync(preludeFile, "utf8") : PRELUDE;
if (prelude) writeFileSync(join(work, "prelude.d.ts"), prelude);
const compilerOptions = { lib: ["deno.window", "deno.ns", "esnext"], types: prelude ? ["./prelude.d.ts"] : [] };
writeFileSync(
  join(work, "deno.json"),
  JSON.stringify({ nodeModulesDir: "manual", imports: selfImports, compilerOptions }, null, 2),
);

// An example that does not parse would stop deno's whole run: report it, and make its fence plain text in the copy.
for (const example of examples) {
  try {
    transformSync(example.code, { loader: "ts" });
  } catch (error) {
    const first = (error as { errors?: { text: string }[] }).errors?.[0]?.text ?? String(error);
    example.errors.push(`not TypeScript: ${first}`);
    const copy = join(work, example.file);
    const lines = readFileSync(copy, "utf8").split("\n");
    lines[example.line - 1] = lines[example.line - 1].replace("```ts", "```text").replace("```typescript", "```text");
    writeFileSync(copy, lines.join("\n"));
  }
}

const deno = join(root, "node_modules", ".bin", "deno");
const env = { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" };
const checked = spawnSync(deno, ["check", "--doc-only", ...files], { cwd: work, env, encoding: "utf8" });
const output = `${checked.stdout}\n${checked.stderr}`;
const diagnostics = output.split(/\n(?=TS\d+ \[ERROR\])/).filter((block) => /^TS\d+ \[ERROR\]/.test(block));
const unplaced: string[] = [];
for (const diagnostic of diagnostics) {
  const [, code, message] = /^(TS\d+) \[ERROR\]: (.*)/.exec(diagnostic)!;
  const at = /^ {4}at file:\/\/(.+?)#(\d+)-\d+\.\w+:\d+:\d+/m.exec(diagnostic);
  const example = at && examples.find((e) => e.file === relative(work, at[1]) && e.line === Number(at[2]));
  if (example) example.errors.push(`${code} ${message}`);
  else unplaced.push(diagnostic.replaceAll(`${work}/`, ""));
}
if (checked.status !== 0 && diagnostics.length === 0 && !examples.some((e) => e.errors.length > 0)) {
  console.error(output);
  process.exit(2);
}

const publicLines = publicDeclarations(deno, env);
const isPublic = (e: Example) =>
  e.declLine === 0 ? entries.includes(e.file) : publicLines.has(`${e.file}:${e.declLine}`);
const failing = examples.filter((e) => e.errors.length > 0);
const seconds = ((performance.now() - started) / 1000).toFixed(1);

/** Why an example fails, in one line: names it uses undeclared, then any other error (TS7006 follows from those). */
function why(example: Example): { undeclared: string[]; other: string[] } {
  const undeclared = new Set<string>();
  const other = new Set<string>();
  for (const error of example.errors) {
    const name = /^TS(?:2304|2552|18004) .*?'([\w$]+)'/.exec(error)?.[1];
    if (name) undeclared.add(name);
    else if (!error.startsWith("TS7006 ")) other.add(error);
  }
  if (undeclared.size === 0 && other.size === 0) for (const error of example.errors) other.add(error);
  return { undeclared: [...undeclared], other: [...other] };
}
const describe = (e: Example) => {
  const { undeclared, other } = why(e);
  const parts = [...(undeclared.length > 0 ? [`undeclared ${undeclared.join(", ")}`] : []), ...other];
  return `- ${e.file}:${e.line} \`${e.symbol}\` (${isPublic(e) ? "public" : "internal"}): ${parts.join("; ")}`;
};
const byKind = {
  syntax: failing.filter((e) => e.errors.some((error) => error.startsWith("not TypeScript"))),
  types: failing.filter(
    (e) => !e.errors.some((error) => error.startsWith("not TypeScript")) && why(e).other.length > 0,
  ),
  names: failing.filter((e) => why(e).other.length === 0),
};
const summary =
  `doc-examples: ${examples.length} example(s) in ${files.length} file(s), ${failing.length} failing ` +
  `(${failing.filter(isPublic).length} on public symbols): ${byKind.names.length} only for undeclared names, ` +
  `${byKind.types.length} with other type errors, ${byKind.syntax.length} not TypeScript; ` +
  `${examples.filter((e) => !isPublic(e)).length} example(s) on internal symbols; prelude ${prelude ? "on" : "off"}; ` +
  `${seconds} s`;
for (const example of failing) console.error(describe(example));
for (const diagnostic of unplaced) console.error(diagnostic);
console.log(summary);

const report = option("report");
if (report) {
  const section = (title: string, list: string[]) => [`## ${title}`, "", ...(list.length > 0 ? list : ["(none)"]), ""];
  const command = ["node tools/doc-examples.ts", ...args.filter((a) => !a.startsWith("--report="))].join(" ");
  writeFileSync(
    report,
    [
      "# JSDoc examples that do not type-check",
      "",
      `\`${command}\`: ${summary}.`,
      "",
      "Each line: the example's opening fence (file:line), the symbol it documents, whether an entry exports",
      "that symbol, and why it fails. Written by the tool; run it again after fixing.",
      "",
      ...(prelude
        ? [
            "The prelude the check ran with (globals; an example's own declaration shadows them):",
            "",
            "```ts",
            prelude.trimEnd(),
            "```",
            "",
          ]
        : []),
      ...section("Not TypeScript (a value or output shown as code)", byKind.syntax.map(describe)),
      ...section("Type errors besides undeclared names", byKind.types.map(describe)),
      ...section(
        "Only undeclared names (declare them in the example, or add them to the prelude)",
        byKind.names.map(describe),
      ),
      ...section(
        "Errors outside any example (the sources themselves)",
        unplaced.map((d) => `\`\`\`\n${d.trimEnd()}\n\`\`\``),
      ),
      ...section(
        "Every example on an internal symbol (no entry exports it)",
        examples.filter((e) => !isPublic(e)).map((e) => `- ${e.file}:${e.line} \`${e.symbol}\``),
      ),
    ].join("\n"),
  );
}
process.exit(failing.length === 0 && unplaced.length === 0 ? 0 : 1);
