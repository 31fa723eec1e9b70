// `deno doc --lint` on every entry of jsr.json, the way JSR sees the package: the sources alone, with
// jsr.json's imports (npm: specifiers), outside this repository's deno.json (which maps node_modules).
// Prints what it finds; exits 1 on any finding but the one deno cannot avoid for npm types: a public
// type of the hono entry referring to hono's own `Context` or `Env` (denoland/deno#27364).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const work = join(root, ".tmp", "doc-lint");
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
cpSync(join(root, "src"), join(work, "src"), { recursive: true });
cpSync(join(root, "dev"), join(work, "dev"), { recursive: true });
type JsrConfig = { exports: Record<string, string>; imports: Record<string, string> };
const jsr = JSON.parse(readFileSync(join(root, "jsr.json"), "utf8")) as JsrConfig;
// The npm package's Node-side entry (./testing) is not on JSR; it is held to the same documentation rules.
const NPM_ONLY = { "./testing": "./src/testing/index.ts" };
const imports = { ...jsr.imports, ioredis: "npm:ioredis@^5.4.0" };
writeFileSync(join(work, "deno.json"), JSON.stringify({ imports }));

const entries = [...Object.values(jsr.exports), ...Object.values(NPM_ONLY)];
let output: string;
try {
  output = execFileSync(join(root, "node_modules", ".bin", "deno"), ["doc", "--lint", ...entries], {
    cwd: work,
    env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
} catch (error) {
  const failed = error as { stdout?: string; stderr?: string };
  output = `${failed.stdout ?? ""}\n${failed.stderr ?? ""}`;
}

const findings = output.split(/\n(?=error\[)/).filter((block) => block.startsWith("error["));
const honoType =
  /^error\[private-type-ref\]: public type '[^']+' references private type '(Context|Env)'\n\s+--> \S+\/src\/hono\//;
const real = findings.filter((finding) => !honoType.test(finding));
for (const finding of real) console.error(finding.replaceAll(`${work}/`, "").trimEnd(), "\n");
const allowed = findings.length - real.length;
console.log(
  `doc-lint: ${entries.join(", ")}: ${real.length} finding(s); ${allowed} reference(s) to hono's Context/Env allowed`,
);
if (/panicked|Module not found/.test(output) && findings.length === 0) {
  console.error(output);
  process.exit(2);
}
process.exit(real.length === 0 ? 0 : 1);
