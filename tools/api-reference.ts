// `node tools/api-reference.ts` (part of `npm run lint`): holds docs/api.md to the package's exports, read with
// `deno doc --json` from the sources of package.json's entries. docs/api.md has a section `## \`<entry>\`` per
// entry; in it, a name is documented by a heading `#### \`Name\``, by a row of a table whose first column is
// "Export", or, when documented in another entry's section, by an "Also exports …" paragraph. Each entry's
// exports must be exactly the names its section documents. Every exported `…Options` type has a table whose first
// column is "Option" under its heading listing exactly its own keys (an inherited type, or the alias's target, is
// named in that section instead), and the defaults of RedlockOptions match DEFAULTS. Prints one line per finding;
// exits 1 on any, 2 when deno cannot run.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const DOC = "docs/api.md";

type Exports = Record<string, string | { types?: string }>;
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Exports };
/** Entry (`.`, `./hono`…) → its source, from the built `types` path (`./dist/src/x.d.ts` → `src/x.ts`). */
const entries = new Map<string, string>();
for (const [entry, target] of Object.entries(pkg.exports)) {
  const types = typeof target === "string" ? undefined : target.types;
  if (types) entries.set(entry, types.replace(/^\.\/dist\//, "").replace(/\.d\.ts$/, ".ts"));
}

interface TypeRef {
  repr?: string;
  kind?: string;
}
interface Declaration {
  kind: string;
  def?: { properties?: { name: string }[]; methods?: { name: string }[]; extends?: TypeRef[]; tsType?: TypeRef };
}
interface DocSymbol {
  name: string;
  declarations: Declaration[];
}
const deno = spawnSync(join(root, "node_modules", ".bin", "deno"), ["doc", "--json", ...entries.values()], {
  cwd: root,
  env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
  encoding: "utf8",
  maxBuffer: 256 * 1024 * 1024,
});
if (deno.status !== 0) {
  console.error(`api-reference: deno doc failed:\n${deno.stderr}`);
  process.exit(2);
}
const nodes = (JSON.parse(deno.stdout) as { nodes: Record<string, { symbols: DocSymbol[] }> }).nodes;
const symbolsOf = (source: string) => nodes[new URL(source, `file://${root}`).href]?.symbols ?? [];
/** Each entry's exported names. */
const exported = new Map([...entries].map(([entry, source]) => [entry, new Set(symbolsOf(source).map((s) => s.name))]));
/** Each name's own declaration (not a re-export), wherever an entry exports it. */
const declarations = new Map<string, Declaration>();
for (const source of entries.values())
  for (const symbol of symbolsOf(source))
    for (const declaration of symbol.declarations)
      if (declaration.kind !== "reference" && !declarations.has(symbol.name))
        declarations.set(symbol.name, declaration);

// docs/api.md, read as sections: entries, then the documented names in each.
interface Documented {
  entry: string;
  line: number;
  how: "heading" | "export row" | "also";
}
/** What a name's heading covers: its lines, the option keys of its tables. */
interface Section {
  entry: string;
  line: number;
  text: string[];
  options: Map<string, string[]>;
}
const findings: string[] = [];
const documented = new Map<string, Documented[]>();
const sections = new Map<string, Section[]>();
const entryLines = new Map<string, number>();
const lines = readFileSync(join(root, DOC), "utf8").split("\n");
let entry: string | undefined;
let section: Section | undefined;
let table: "export" | "option" | "other" | undefined;
let also = false;
let fenced = false;
const cells = (row: string) =>
  row
    .slice(1, -1)
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
const nameIn = (cell: string | undefined) => /^`([A-Za-z_$][\w$]*)`$/.exec(cell ?? "")?.[1];
const add = (name: string, how: Documented["how"], line: number) => {
  if (!entry) return findings.push(`${DOC}:${line}: \`${name}\` is outside any entry's section`);
  documented.set(name, [...(documented.get(name) ?? []), { entry, line, how }]);
};
lines.forEach((text, i) => {
  const line = i + 1;
  if (/^\s*```/.test(text)) fenced = !fenced;
  if (fenced) {
    section?.text.push(text);
    return;
  }
  const heading = /^(#{1,6})\s+(.*?)\s*$/.exec(text);
  if (heading) {
    table = undefined;
    also = false;
    section = undefined;
    const spec = /^`(edge-redlock(?:\/[\w/-]+)?)`$/.exec(heading[2])?.[1];
    if (heading[1] === "##") {
      entry = spec === undefined ? undefined : `.${spec.slice("edge-redlock".length)}`;
      if (entry !== undefined) entryLines.set(entry, line);
      else findings.push(`${DOC}:${line}: a section that names no entry: ${heading[2]}`);
      return;
    }
    const name = nameIn(heading[2]);
    if (name) {
      add(name, "heading", line);
      section = { entry: entry ?? "", line, text: [], options: new Map() };
      sections.set(name, [...(sections.get(name) ?? []), section]);
    }
    return;
  }
  section?.text.push(text);
  if (text.trim() === "") {
    table = undefined;
    also = false;
    return;
  }
  if (text.startsWith("Also exports")) also = true;
  if (also) for (const match of text.matchAll(/`([A-Za-z_$][\w$]*)`/g)) add(match[1], "also", line);
  if (!text.startsWith("|")) return;
  const row = cells(text);
  if (table === undefined) {
    table = row[0] === "Export" ? "export" : row[0] === "Option" ? "option" : "other";
    return;
  }
  if (/^-+$/.test(row[0].replace(/:/g, ""))) return;
  const name = nameIn(row[0]);
  if (table === "export") {
    if (name) add(name, "export row", line);
    else findings.push(`${DOC}:${line}: an Export row that names no export: ${row[0]}`);
  } else if (table === "option") {
    if (!section || !name) findings.push(`${DOC}:${line}: an Option row outside a type's heading, or naming no key`);
    else section.options.set(name, row);
  }
});

const where = (entry: string) => `edge-redlock${entry.slice(1)}`;
for (const entry of entries.keys())
  if (!entryLines.has(entry))
    findings.push(`${DOC}: no section \`## \`${where(entry)}\`\` for an entry of package.json`);
for (const [entry, line] of entryLines)
  if (!entries.has(entry)) findings.push(`${DOC}:${line}: ${where(entry)} is not an entry of package.json`);

// Each entry: what it exports, documented in its section; what its section documents, exported by it.
for (const [entry, names] of exported) {
  for (const name of names) {
    const here = (documented.get(name) ?? []).filter((d) => d.entry === entry);
    if (here.length === 0) findings.push(`${DOC}: \`${name}\`, exported by ${where(entry)}, is not documented there`);
    if (here.length > 1)
      findings.push(
        `${DOC}:${here[1].line}: \`${name}\` is documented twice in ${where(entry)} (first on ${here[0].line})`,
      );
    if (here.length > 0 && here.every((d) => d.how === "also")) {
      const elsewhere = (documented.get(name) ?? []).some((d) => d.entry !== entry && d.how !== "also");
      if (!elsewhere)
        findings.push(
          `${DOC}:${here[0].line}: \`${name}\` of ${where(entry)} is said to be documented elsewhere, but is not`,
        );
    }
  }
}
for (const [name, places] of documented)
  for (const place of places)
    if (exported.has(place.entry) && !exported.get(place.entry)?.has(name))
      findings.push(`${DOC}:${place.line}: \`${name}\` is not an export of ${where(place.entry)}`);

// Option types: every key in the table under the type's heading; no key that is not one.
const mentions = (sections: Section[], name: string) =>
  sections.some((s) => s.text.some((text) => text.includes(`\`${name}\``) || text.includes(`\`${name}<`)));
const baseName = (ref: TypeRef) => ref.repr?.replace(/<.*$/, "") ?? "";
for (const [name, declaration] of declarations) {
  if (!name.endsWith("Options")) continue;
  const own = declaration.kind === "interface";
  const alias = declaration.kind === "typeAlias" && declaration.def?.tsType?.kind === "typeRef";
  if (!own && !alias) continue;
  const found = sections.get(name) ?? [];
  if (found.length === 0) continue; // reported above as undocumented
  const parents = own ? (declaration.def?.extends ?? []).map(baseName) : [baseName(declaration.def?.tsType ?? {})];
  for (const parent of parents)
    if (!mentions(found, parent))
      findings.push(`${DOC}:${found[0].line}: \`${name}\` has the options of \`${parent}\`: name it in its section`);
  if (!own) continue;
  const keys = [...(declaration.def?.properties ?? []), ...(declaration.def?.methods ?? [])].map((p) => p.name);
  const rows = new Map(found.flatMap((s) => [...s.options]));
  for (const key of keys)
    if (!rows.has(key))
      findings.push(`${DOC}:${found[0].line}: option \`${key}\` of \`${name}\` has no row in its table`);
  for (const key of rows.keys())
    if (!keys.includes(key)) findings.push(`${DOC}:${found[0].line}: \`${name}\` has no option \`${key}\``);
}

// The documented defaults of RedlockOptions are the code's: DEFAULTS, as src/options.ts writes it (tools/ reads
// src/, never imports it).
const defaultsSource = /export const DEFAULTS\b[^=]*=\s*Object\.freeze\(\{([^}]*)\}\)/.exec(
  readFileSync(join(root, "src", "options.ts"), "utf8"),
)?.[1];
if (!defaultsSource?.includes(":")) findings.push("src/options.ts: DEFAULTS not found: update tools/api-reference.ts");
const DEFAULTS = Object.fromEntries(
  [...(defaultsSource ?? "").matchAll(/(\w+):\s*([^,\n]+)/g)].map(([, key, value]) => [
    key,
    value.trim().replaceAll("_", ""),
  ]),
);
const redlockRows = new Map((sections.get("RedlockOptions") ?? []).flatMap((s) => [...s.options]));
for (const [key, value] of Object.entries(DEFAULTS)) {
  const cell = redlockRows.get(key)?.[2];
  if (cell !== undefined && cell !== `\`${String(value)}\``)
    findings.push(
      `${DOC}: RedlockOptions.${key} is documented with default ${cell}; the code's is \`${String(value)}\``,
    );
}

for (const finding of findings) console.error(finding);
const total = [...exported.values()].reduce((n, names) => n + names.size, 0);
console.log(
  `api-reference: ${total} export(s) of ${entries.size} entries against ${DOC}: ${findings.length} finding(s)`,
);
process.exit(findings.length === 0 ? 0 : 1);
