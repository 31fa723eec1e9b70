// `npm run bench:bundle`: what a Worker bundles of this library, minified and gzipped, with @upstash/redis
// and hono external (the user's own dependencies): Redlock alone, the redlock() middleware, the whole root
// entry. Each is a one-line entry that re-exports the symbol, bundled by esbuild as a Worker build would.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
/** Issue 21's reference (main at 0296f5b); the first two must stay within 10 % of it. */
const BASELINE: Record<string, number> = { "Redlock alone": 10_692, "redlock() middleware": 12_364, "whole root entry": 15_671 };
const entries: Record<string, string> = {
  "Redlock alone": 'export { Redlock } from "./src/index.ts";',
  "redlock() middleware": 'export { redlock } from "./src/hono/index.ts";',
  "whole root entry": 'export * from "./src/index.ts";',
};

/**
 * Bytes of the minified bundle of `contents` (an entry in the repository root), raw and gzipped.
 * @example
 * const { min, gz } = await bundleSize('export { Redlock } from "./src/index.ts";');
 */
export async function bundleSize(contents: string): Promise<{ min: number; gz: number }> {
  const result = await build({
    stdin: { contents, resolveDir: root, sourcefile: "entry.ts", loader: "ts" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    external: ["@upstash/redis", "@upstash/redis/*", "hono", "hono/*"],
    write: false,
    logLevel: "silent",
  });
  const code = result.outputFiles[0].contents;
  return { min: code.length, gz: gzipSync(code, { level: 9 }).length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log("esbuild --bundle --minify --format=esm --platform=neutral, @upstash/redis and hono external; gzip -9\n");
  for (const [name, contents] of Object.entries(entries)) {
    const { min, gz } = await bundleSize(contents);
    const ratio = gz / BASELINE[name];
    console.log(`${name.padEnd(22)} ${String(min).padStart(7)} B min  ${String(gz).padStart(7)} B gz  (${ratio.toFixed(3)}× ${BASELINE[name]} B)`);
  }
}
