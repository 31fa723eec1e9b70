// Users' TypeScript written against the entries type-checks: a middleware options object shared by redlock(),
// readWrite() and semaphore(), and a RedlockNode written against edge-redlock/mutex alone. Each case is a file
// type-checked with the repository's tsc against src/ (written to .tmp/ at run time, so `npm run typecheck` never sees it).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = new URL("../../..", import.meta.url).pathname;

function typeErrors(name: string, source: string): string {
  const dir = join(root, ".tmp", "entry-types", name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "probe.ts"), source);
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "Bundler",
        lib: ["ES2023", "DOM", "ESNext.Disposable"],
        types: [],
        strict: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        noEmit: true,
      },
      files: ["probe.ts"],
    }),
  );
  try {
    execFileSync(join(root, "node_modules/.bin/tsc"), ["-p", dir], { encoding: "utf8" });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

describe("existing user code still type-checks", () => {
  it("one RedlockMiddlewareOptions object shared by redlock(), readWrite() and semaphore()", () => {
    const errors = typeErrors(
      "shared-options",
      `import { Redlock } from "../../../src/index.ts";
import { readWrite, redlock, semaphore, type RedlockMiddlewareOptions } from "../../../src/hono/index.ts";
declare const full: Redlock;
const common: RedlockMiddlewareOptions = { ttl: 5_000, redlock: full };
export const routes = [redlock("k", common), readWrite("doc", common), semaphore("s", { ...common, limit: 2 })];
`,
    );
    expect(errors).toBe("");
  });

  it("a RedlockNode written against edge-redlock/mutex alone (its doc: everything else the mutex needs is exported)", () => {
    const errors = typeErrors(
      "mutex-node",
      `import { Redlock, type RedlockNode, type Script, type NodeVote } from "../../../src/mutex/index.ts";
export const node: RedlockNode = { label: "mine", run: async (_s: Script) => 1 };
export const votes = async (r: Redlock): Promise<NodeVote[]> => (await (await r.acquire("k", 5_000)).release()).votes;
`,
    );
    expect(errors).toBe("");
  });
});
