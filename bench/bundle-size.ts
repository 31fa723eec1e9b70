// `npm run bench:bundle`: what a Worker bundles of this library, minified and gzipped, with @upstash/redis
// and hono external (the user's own dependencies): Redlock alone, the Redlock of edge-redlock/mutex (the mutex
// alone), the redlock() middleware, the whole root entry. Each is a one-line entry that re-exports the symbol,
// bundled by esbuild as a Worker build would.
// `-- --against=<commit>` measures that commit's src/ too (taken from git into .tmp/), beside this one.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
/**
 * Gzipped bytes of each entry at the default baseline of bench/previous.ts (main before the hot path's CPU
 * work); each of the first two must stay within 10 % of its own.
 */
const BASELINE: Record<string, number> = {
  "Redlock alone": 10_692,
  "edge-redlock/mutex": 10_692, // against Redlock alone then (the mutex, the semaphore and inspection)
  "redlock() middleware": 12_364,
  "whole root entry": 15_671,
};
const entries: Record<string, string> = {
  "Redlock alone": 'export { Redlock } from "./src/index.ts";',
  "edge-redlock/mutex": 'export { Redlock } from "./src/mutex/index.ts";',
  "redlock() middleware": 'export { redlock } from "./src/hono/index.ts";',
  "whole root entry": 'export * from "./src/index.ts";',
};

/**
 * The minified bundle of `contents` (an entry in the repository root), as a Worker build makes it.
 * @example
 * const code = await bundleText('export { Redlock } from "./src/mutex/index.ts";');
 */
export async function bundleText(contents: string, dir = root): Promise<string> {
  const result = await build({
    stdin: { contents, resolveDir: dir, sourcefile: "entry.ts", loader: "ts" },
    nodePaths: [join(root, "node_modules")],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    external: ["@upstash/redis", "@upstash/redis/*", "hono", "hono/*"],
    write: false,
    logLevel: "silent",
  });
  return result.outputFiles[0].text;
}

/**
 * Bytes of the minified bundle of `contents` (an entry in the repository root), raw and gzipped.
 * @example
 * const { min, gz } = await bundleSize('export { Redlock } from "./src/index.ts";');
 */
export async function bundleSize(contents: string, dir = root): Promise<{ min: number; gz: number }> {
  const code = new TextEncoder().encode(await bundleText(contents, dir));
  return { min: code.length, gz: gzipSync(code, { level: 9 }).length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const against = process.argv.find((arg) => arg.startsWith("--against="))?.slice("--against=".length);
  let other: string | undefined;
  if (against) {
    other = join(root, ".tmp", `bundle-${against}`);
    if (!existsSync(join(other, "src"))) {
      mkdirSync(other, { recursive: true });
      execFileSync("tar", ["-x", "-C", other], {
        input: execFileSync("git", ["archive", against, "src"], { cwd: root }),
      });
    }
  }
  console.log("esbuild --bundle --minify --format=esm --platform=neutral, @upstash/redis and hono external; gzip -9\n");
  for (const [name, contents] of Object.entries(entries)) {
    const { min, gz } = await bundleSize(contents);
    const ratio = gz / BASELINE[name];
    const sizes = `${String(min).padStart(7)} B min  ${String(gz).padStart(7)} B gz`;
    let line = `${name.padEnd(22)} ${sizes}  (${ratio.toFixed(3)}× ${BASELINE[name]} B)`;
    if (other && existsSync(join(other, contents.split('"')[1]))) {
      const was = await bundleSize(contents, other);
      const change = `${gz >= was.gz ? "+" : "−"}${Math.abs(gz - was.gz)} B gz`;
      line += `   ${against}: ${was.min} B min, ${was.gz} B gz (${change})`;
    }
    console.log(line);
  }
}
