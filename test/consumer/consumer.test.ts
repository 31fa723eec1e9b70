// The package as users get it: `npm pack` (which builds it), the tarball unpacked into scratch projects
// outside this repository, each type-checked strictly (skipLibCheck off) and run against a real cluster:
// Node ESM, Node CommonJS (`require`), Cloudflare Workers (`wrangler types`, tsc, `wrangler dev`),
// a Vercel Edge route handler (bundled as Next.js does, run in the edge-runtime VM), Deno and Bun.
// The scratch projects get the tarball's files as npm would unpack them, and links to the tools and
// peer dependencies already in this repository's node_modules: nothing is fetched.
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EdgeVM } from "@edge-runtime/vm";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../../dev/cluster.ts";
import { freePort } from "../../dev/redis-server.ts";
import { Redlock, envNames } from "../../src/index.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const modules = join(repo, "node_modules");
const tool = (name: string) => join(modules, ".bin", name);
const quiet = {
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  DENO_NO_UPDATE_CHECK: "1",
  NO_COLOR: "1",
  FORCE_COLOR: "0",
};

let cluster: Cluster;
let scratch: string;
let tarball: string;
let packedFiles: string[];
let vars: Record<string, string>;
const children = new Set<ChildProcess>();

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never rejects (the caller asserts on the exit code and prints the output). */
function run(
  file: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined> },
): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: { ...process.env, ...quiet, ...options.env },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 90_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (((error as { code?: unknown }).code as number | null) ?? 1) : 0;
        resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
      },
    );
  });
}

/** Asserts success, showing the command's output when it failed. */
function ok(ran: Ran, what: string): Ran {
  if (ran.code !== 0)
    throw new Error(`${what} exited ${ran.code}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`);
  return ran;
}

/** Starts a server process and resolves with its base URL once `ready` finds it in the output (or it answers). */
function serve(
  file: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined>; ready: RegExp | string },
): Promise<string> {
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: { ...process.env, ...quiet, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.add(child);
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not start within 60 s:\n${output}`)), 60_000);
    const done = (url: string) => {
      clearTimeout(timer);
      resolve(url);
    };
    const onData = (chunk: Buffer) => {
      output += String(chunk);
      if (options.ready instanceof RegExp) {
        const match = options.ready.exec(output);
        if (match) done(match[1]);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited (${code}) before it was ready:\n${output}`));
    });
    if (typeof options.ready === "string") {
      const url = options.ready;
      const poll = async () => {
        while (child.exitCode === null) {
          const answered = await fetch(url).then(
            (r) => {
              void r.body?.cancel();
              return true;
            },
            () => false,
          );
          if (answered) return done(url);
          await new Promise((r) => setTimeout(r, 200));
        }
      };
      void poll();
    }
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
  const group = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal); // the whole group: wrangler's workerd, next's workers too
    } catch {
      // already gone
    }
  };
  return new Promise((resolve) => {
    const force = setTimeout(() => group("SIGKILL"), 10_000); // a server that ignores SIGTERM
    child.once("exit", () => {
      clearTimeout(force);
      resolve();
    });
    group("SIGTERM");
  });
}

/**
 * A scratch project: `files`, the tarball unpacked into node_modules/edge-redlock (what `npm install
 * edge-redlock-0.1.0.tgz` puts there), and links to `links` in this repository's node_modules.
 */
function project(name: string, files: Record<string, string>, links: string[]): string {
  const dir = join(scratch, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const installed = join(dir, "node_modules", "edge-redlock");
  mkdirSync(installed, { recursive: true });
  const untar = spawnSync("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"], { encoding: "utf8" });
  if (untar.status !== 0) throw new Error(`tar exited ${untar.status}: ${untar.stderr}`);
  for (const link of links) {
    mkdirSync(dirname(join(dir, "node_modules", link)), { recursive: true });
    symlinkSync(join(modules, link), join(dir, "node_modules", link), "dir");
  }
  return dir;
}

/** The bin links npm makes for the package (`node_modules/.bin/<name>`, executable). */
function linkBins(dir: string): void {
  const pkg = JSON.parse(readFileSync(join(dir, "node_modules/edge-redlock/package.json"), "utf8")) as {
    bin: Record<string, string>;
  };
  mkdirSync(join(dir, "node_modules/.bin"), { recursive: true });
  for (const [name, target] of Object.entries(pkg.bin)) {
    chmodSync(join(dir, "node_modules/edge-redlock", target), 0o755);
    symlinkSync(join("..", "edge-redlock", target), join(dir, "node_modules/.bin", name));
  }
}

const example = (path: string) => readFileSync(join(repo, "examples", path), "utf8");
const devVars = () =>
  `${Object.entries(vars)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n")}\n`;
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

interface Answer {
  status: number;
  body: string;
  retryAfter: string | null;
}

/**
 * The examples' counter, driven over `call`: five increments at once each see a different value (the
 * lock serialises the read-modify-write); a lock held elsewhere answers 423 with Retry-After; released, it is free again.
 */
async function exerciseCounter(
  call: (method: "GET" | "POST", path: string) => Promise<Answer>,
  name: string,
  nodes = cluster.nodes as { url: string; token: string }[],
): Promise<void> {
  const five = await Promise.all(Array.from({ length: 5 }, () => call("POST", `/counter/${name}`)));
  expect(
    five.map((a) => a.status),
    five.map((a) => a.body).join("\n"),
  ).toEqual([200, 200, 200, 200, 200]);
  expect(five.map((a) => (JSON.parse(a.body) as { value: number }).value).sort()).toEqual([1, 2, 3, 4, 5]);
  expect(JSON.parse((await call("GET", `/counter/${name}`)).body)).toEqual({ value: 5 });

  const holder = await new Redlock(nodes, { retryCount: 0 }).acquire([`lock:counter:${name}`], 5_000);
  const busy = await call("POST", `/counter/${name}?wait=0`);
  expect(busy.status, busy.body).toBe(423);
  expect(Number(busy.retryAfter)).toBeGreaterThanOrEqual(1);
  await (await holder.release()).pending;
  const after = await call("POST", `/counter/${name}?wait=0`);
  expect(after.status, after.body).toBe(200);
  expect((JSON.parse(after.body) as { value: number }).value).toBe(6);
}

const overHttp =
  (base: string) =>
  async (method: "GET" | "POST", path: string): Promise<Answer> => {
    const res = await fetch(base + path, { method });
    return { status: res.status, body: await res.text(), retryAfter: res.headers.get("retry-after") };
  };

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "edge-redlock-consumer-"));
  const [started, packed] = await Promise.all([
    startCluster({ nodes: 5 }),
    run("npm", ["pack", "--json", "--pack-destination", scratch], { cwd: repo }), // prepack builds dist/
  ]);
  cluster = started;
  vars = Object.fromEntries(
    cluster.nodes.flatMap((n, i) => [
      [envNames(i + 1).url, n.url],
      [envNames(i + 1).token, n.token],
    ]),
  );
  ok(packed, "npm pack");
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(scratch, info.filename);
  packedFiles = info.files.map((f) => f.path).sort();
}, 120_000);

afterAll(async () => {
  await Promise.all([...children].map(stop));
  await cluster?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  it("holds the built package and what a user needs, nothing else", () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        "package.json",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "dist/src/index.js",
        "dist/src/index.d.ts",
        "dist/src/hono/index.js",
        "dist/src/hono/index.d.ts",
        "dist/src/scripts/index.js",
        "dist/src/doctor/index.js",
        "dist/cli/main.js",
        "dist/src/testing/index.js",
        "dist/src/testing/index.d.ts",
        "dist/src/testing/memory.js",
        "dist/src/testing/memory.d.ts",
        "dist/dev/bridge.js",
        "dist/dev/cluster.js",
        "dist/dev/redis-server.js",
        // The README's links to the docs hold in node_modules too.
        "docs/guide.md",
        "docs/troubleshooting.md",
      ]),
    );
    const unexpected = packedFiles.filter(
      (f) =>
        !/^(package\.json|README\.md|LICENSE|CHANGELOG\.md|docs\/[\w-]+\.md|dist\/src\/([\w-]+\/)?[\w-]+\.(js|d\.ts)|dist\/cli\/[\w-]+\.js|dist\/dev\/[\w-]+\.js)$/.test(
          f,
        ),
    );
    expect(unexpected).toEqual([]);
  });
});

describe("a Node ES module project", () => {
  it("type-checks strictly against the package, takes, contends for and releases a lock, and runs the doctor from its bin", async () => {
    const dir = project(
      "node-esm",
      {
        "package.json": json({ name: "consumer-node-esm", private: true, type: "module" }),
        "tsconfig.json": json({
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            lib: ["ES2022"],
            types: ["node"],
            strict: true,
            skipLibCheck: false,
            outDir: "dist",
            rootDir: "src",
          },
          include: ["src"],
        }),
        "src/lock.ts": readFileSync(join(repo, "test/consumer/fixtures/node/lock.ts"), "utf8"),
        ".dev.vars": devVars(),
      },
      ["@upstash/redis", "hono", "@types/node"],
    );
    linkBins(dir);
    ok(await run(tool("tsc"), ["-p", dir], { cwd: dir }), "tsc");
    expect(readFileSync(join(dir, "dist/lock.js"), "utf8")).toMatch(
      /^import \{ LockAcquisitionError, Redlock \} from "edge-redlock";$/m,
    );
    const ran = ok(
      await run(process.execPath, ["dist/lock.js", "consumer:esm"], { cwd: dir, env: vars }),
      "node dist/lock.js",
    );
    expect(JSON.parse(ran.stdout)).toMatchObject({
      system: "esm",
      contended: "held",
      reacquired: true,
      middleware: "function",
    });
    expect((JSON.parse(ran.stdout) as { released: number }).released).toBeGreaterThanOrEqual(3);

    // The bin as npm links it: `npx edge-redlock doctor --env-file .dev.vars`.
    const bin = join(dir, "node_modules/.bin/edge-redlock");
    const doctor = await run(bin, ["doctor", "--env-file", ".dev.vars", "--samples", "2"], {
      cwd: dir,
      env: { PATH: process.env.PATH },
    });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(/^OK: 5 independent nodes, quorum 3, a lock takes about [\d.]+ ms$/m);
    writeFileSync(join(dir, ".dev.vars"), devVars().replace(vars.UPSTASH_REDIS_REST_URL_5, "http://127.0.0.1:9"));
    const down = await run(bin, ["doctor", "--env-file", ".dev.vars", "--samples", "1"], { cwd: dir });
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/^FAIL +reachable +UPSTASH_REDIS_REST_URL_5: network: /m);
    for (const secret of [vars.UPSTASH_REDIS_REST_TOKEN_1, ...cluster.nodes.map((n) => n.url)])
      expect(doctor.stdout + down.stdout).not.toContain(secret);
    expect(ok(await run(bin, ["--version"], { cwd: dir }), "edge-redlock --version").stdout).toBe(
      `${JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version}\n`,
    );
  });
});

describe("a Node CommonJS project", () => {
  it("compiles to require(), type-checks strictly, and takes, contends for and releases a lock on Node 24", async () => {
    const dir = project(
      "node-cjs",
      {
        "package.json": json({ name: "consumer-node-cjs", private: true, type: "commonjs" }),
        "tsconfig.json": json({
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            lib: ["ES2022"],
            types: ["node"],
            strict: true,
            skipLibCheck: false,
            outDir: "dist",
            rootDir: "src",
          },
          include: ["src"],
        }),
        "src/lock.ts": readFileSync(join(repo, "test/consumer/fixtures/node/lock.ts"), "utf8"),
      },
      ["@upstash/redis", "hono", "@types/node"],
    );
    ok(await run(tool("tsc"), ["-p", dir], { cwd: dir }), "tsc");
    const emitted = readFileSync(join(dir, "dist/lock.js"), "utf8");
    expect(emitted).toContain('require("edge-redlock")');
    expect(emitted).toContain('require("edge-redlock/hono")');
    const ran = ok(
      await run(process.execPath, ["dist/lock.js", "consumer:cjs"], { cwd: dir, env: vars }),
      "node dist/lock.js",
    );
    expect(process.version).toMatch(/^v24\./);
    expect(JSON.parse(ran.stdout)).toMatchObject({
      system: "commonjs",
      contended: "held",
      reacquired: true,
      middleware: "function",
    });
  });
});

describe("a Vercel Edge (Next.js) route handler", () => {
  it("type-checks strictly, bundles with the edge conditions, and runs in the edge-runtime VM", async () => {
    const route = "app/api/counter/[name]/route.ts";
    const dir = project(
      "vercel-edge",
      {
        "package.json": json({ name: "consumer-vercel-edge", private: true }),
        "tsconfig.json": example("vercel-edge/tsconfig.json"),
        [route]: example(`vercel-edge/${route}`),
      },
      ["@upstash/redis", "@types/node"],
    );
    ok(await run(tool("tsc"), ["-p", dir], { cwd: dir }), "tsc");
    expect(readFileSync(join(dir, route), "utf8")).toMatch(/^export const runtime = "edge";$/m);
    // Next.js bundles edge routes with these conditions; the bundle is a script the VM can evaluate.
    const bundle = await build({
      entryPoints: [join(dir, route)],
      absWorkingDir: dir,
      bundle: true,
      write: false,
      format: "iife",
      globalName: "route",
      platform: "browser",
      conditions: ["edge-light", "worker", "browser"],
      target: "es2022",
      logLevel: "silent",
    });
    // The route imports edge-redlock/mutex: the lock alone is bundled, not the read-write lock or the semaphore.
    expect(bundle.outputFiles[0].text).toContain("fromEnv");
    expect(bundle.outputFiles[0].text).not.toContain("readWriteLock");
    expect(bundle.outputFiles[0].text).not.toContain("semaphore:");
    const vm = new EdgeVM({
      extend: (context) => Object.assign(context, { process: { env: { ...vars } } }),
    });
    expect(vm.evaluate("typeof EdgeRuntime")).toBe("string");
    vm.evaluate(bundle.outputFiles[0].text);
    vm.evaluate(`globalThis.__call = async (method, path) => {
      const name = path.split("?")[0].split("/")[2];
      const res = await route[method](new Request("https://edge.test/api" + path, { method }), { params: Promise.resolve({ name }) });
      return { status: res.status, body: await res.text(), retryAfter: res.headers.get("retry-after") };
    }`);
    expect(vm.evaluate("route.runtime")).toBe("edge");
    const call = (method: "GET" | "POST", path: string) =>
      vm.evaluate(`__call(${JSON.stringify(method)}, ${JSON.stringify(path)})`) as Promise<Answer>;
    await exerciseCounter(call, "vercel");
  });
});

describe("edge-redlock/testing without ioredis installed", () => {
  // The optional peer really absent: a project outside this repository whose node_modules holds the
  // tarball and @upstash/redis only, so Node's resolution finds no ioredis anywhere up the tree.
  const script = [
    'import { startLocalNodes } from "edge-redlock/testing";',
    "try {",
    "  await (await startLocalNodes({ nodes: 1 })).stop();",
    '  console.log("started");',
    "} catch (error) {",
    "  console.log(error.message);",
    "  process.exitCode = 1;",
    "}",
    "",
  ].join("\n");

  it("startLocalNodes says to install ioredis, with the command for npm, Bun and Deno", async () => {
    const dir = project(
      "no-ioredis",
      { "package.json": json({ name: "consumer-no-ioredis", private: true, type: "module" }), "start.mjs": script },
      ["@upstash/redis"],
    );
    const ran = await run(process.execPath, ["start.mjs"], { cwd: dir });
    expect(ran.code, ran.stdout + ran.stderr).toBe(1);
    expect(ran.stdout).toBe(
      "edge-redlock/testing: startLocalNodes needs the ioredis package (the local bridge's Redis client). Install it as a dev dependency: npm install --save-dev ioredis (bun add -d ioredis; deno add npm:ioredis). Or, with nothing to install: memory nodes, startLocalNodes({ memory: true }) (npx edge-redlock dev --memory)\n",
    );
  });

  it("and starts the nodes once it is there (the control)", async () => {
    const dir = project(
      "with-ioredis",
      { "package.json": json({ name: "consumer-with-ioredis", private: true, type: "module" }), "start.mjs": script },
      ["@upstash/redis", "ioredis"],
    );
    const ran = ok(await run(process.execPath, ["start.mjs"], { cwd: dir }), "node start.mjs");
    expect(ran.stdout).toBe("started\n");
  });
});

describe("the JSR package (jsr.json)", () => {
  it("passes deno publish --dry-run: its files type-check and its public API has no slow types", async () => {
    // The files jsr.json publishes, in a scratch folder whose npm: imports resolve from linked node_modules
    // (nodeModulesDir: manual), so the check needs no registry; jsr.io itself is never contacted by a dry run.
    const config = JSON.parse(readFileSync(join(repo, "jsr.json"), "utf8")) as {
      name: string;
      version: string;
      publish: { include: string[] };
    };
    const dir = join(scratch, "jsr");
    mkdirSync(dir);
    for (const entry of ["src", "README.md", "LICENSE", "CHANGELOG.md"])
      cpSync(join(repo, entry), join(dir, entry), { recursive: true });
    writeFileSync(join(dir, "jsr.json"), json({ ...config, nodeModulesDir: "manual" }));
    writeFileSync(
      join(dir, "package.json"),
      json({ name: "jsr-check", private: true, dependencies: { "@upstash/redis": "*", hono: "*" } }),
    );
    for (const link of ["@upstash/redis", "hono", "uncrypto"]) {
      mkdirSync(dirname(join(dir, "node_modules", link)), { recursive: true });
      symlinkSync(join(modules, link), join(dir, "node_modules", link), "dir");
    }
    const published = ok(
      await run(tool("deno"), ["publish", "--dry-run", "--config", "jsr.json"], { cwd: dir }),
      "deno publish --dry-run",
    );
    const output = (published.stdout + published.stderr).replace(
      new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"),
      "",
    );
    expect(output).toContain(`Simulating publish of ${config.name}@${config.version}`);
    expect(output).toContain("Success Dry run complete");
    expect(output).not.toContain("Download");
  });
});

/** A recipe of the documentation: one section of a page (README.md or a page under docs/). */
interface Recipe {
  /** The files: each code block with a bold `path` line directly above it (`**\`test/lock.test.ts\`**`). */
  files: Record<string, string>;
  /** The packages its install lines (`npm install`, `bun add`, `deno add`) name, the tarball's path left out. */
  installs: string[];
  /** Whether an install line names the tarball. */
  tarball: boolean;
  /** The other lines of its `sh` blocks, in order: the commands that run it. */
  commands: string[];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");

/** The sections that hold recipes, by page and anchor, with the test's name for each. */
const RECIPE_SECTIONS: Record<string, string> = {
  "docs/testing.md#the-recipes": "shared", // the package.json every recipe starts from
  "docs/testing.md#cloudflare-workers-with-cloudflarevitest-plugin": "workers",
  "docs/testing.md#workers-on-memory-nodes": "workers-memory",
  "docs/testing.md#workers-with-nodes-you-run-yourself": "workers-running",
  "docs/testing.md#honos-apprequest-on-node": "hono-node",
  "docs/testing.md#unit-tests-on-memory-nodes-any-runtime": "memory",
  "docs/testing.md#deno": "deno",
  "docs/testing.md#bun": "bun",
  "docs/migrating-from-node-redlock.md#before-and-after": "from-node-redlock",
  "docs/migrating-from-upstash-lock.md#before-and-after": "from-upstash-lock",
};

/** Every section of README.md and docs/ with a file in it, named as RECIPE_SECTIONS names it (else page#anchor). */
function docRecipes(): Map<string, Recipe> {
  const docs = join(repo, "docs");
  const pages = [
    "README.md",
    ...(readdirSync(docs, { recursive: true }) as string[])
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => join("docs", f)),
  ];
  const recipes = new Map<string, Recipe>();
  for (const page of pages) {
    const sections: [string, string[]][] = [["", []]];
    let fenced = false;
    for (const line of readFileSync(join(repo, page), "utf8").split("\n")) {
      if (/^\s*```/.test(line)) fenced = !fenced;
      const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
      if (heading) sections.push([anchor(heading[1]), []]);
      else sections.at(-1)![1].push(line);
    }
    for (const [slug, lines] of sections) {
      const body = lines.join("\n");
      const files: Record<string, string> = {};
      for (const [, path, block] of body.matchAll(/^\*\*`([^`\s]+)`\*\*\n```\w*\n([\s\S]*?)\n```/gm))
        files[path] = `${block}\n`;
      if (Object.keys(files).length === 0) continue;
      const recipe: Recipe = { files, installs: [], tarball: false, commands: [] };
      for (const [, block] of body.matchAll(/^```sh\n([\s\S]*?)\n```/gm)) {
        for (const raw of block.split("\n")) {
          const line = raw.replace(/(^|\s)#.*$/, "").trim();
          if (!line) continue;
          const install = /^(?:npm install|npm i|bun add|deno add)\s+(.*)$/.exec(line);
          if (!install) {
            recipe.commands.push(line);
            continue;
          }
          for (const arg of install[1].split(/\s+/).filter((a) => !a.startsWith("-"))) {
            if (arg.endsWith(".tgz")) recipe.tarball = true;
            else recipe.installs.push(arg.replace(/^npm:/, ""));
          }
        }
      }
      recipes.set(RECIPE_SECTIONS[`${page}#${slug}`] ?? `${page}#${slug}`, recipe);
    }
  }
  return recipes;
}

/** What each recipe's install lines must name: the test links exactly these from this repository's node_modules. */
const RECIPE_LINKS: Record<string, string[]> = {
  workers: ["@upstash/redis", "hono", "vitest", "@cloudflare/vitest-plugin", "wrangler", "ioredis", "typescript"],
  "workers-running": ["@upstash/redis", "hono", "vitest", "@cloudflare/vitest-plugin", "wrangler", "ioredis"],
  // Memory nodes: nothing to install beyond the package and the test tools (no ioredis, no redis-server).
  "workers-memory": ["@upstash/redis", "hono", "vitest", "@cloudflare/vitest-plugin", "wrangler"],
  "hono-node": ["@upstash/redis", "hono", "vitest", "ioredis"],
  memory: ["@upstash/redis", "vitest"],
  deno: ["@upstash/redis", "ioredis"],
  bun: ["@upstash/redis", "ioredis"],
  "from-node-redlock": ["@upstash/redis"],
  "from-upstash-lock": ["@upstash/redis"],
};

/**
 * A recipe's project: the shared package.json with the dependencies its install lines add (as npm writes them),
 * its files (after `base`, which it overrides), the linked packages and the bins npm would link for them.
 */
function recipeProject(
  name: string,
  recipe: Recipe,
  shared: Recipe,
  options: {
    base?: Record<string, string>;
    packageJson?: (pkg: Record<string, unknown>) => Record<string, unknown>;
    /** The project's folder, when not recipe-<name>. */
    folder?: string;
  } = {},
): string {
  const pkg = JSON.parse(shared.files["package.json"]) as Record<string, unknown>;
  const dependencies = Object.fromEntries(["edge-redlock", ...recipe.installs].map((dep) => [dep, "*"]));
  const written = options.packageJson?.({ ...pkg, dependencies }) ?? { ...pkg, dependencies };
  const dir = project(
    options.folder ?? `recipe-${name}`,
    { "package.json": json(written), ...options.base, ...recipe.files },
    RECIPE_LINKS[name],
  );
  mkdirSync(join(dir, "node_modules/.bin"), { recursive: true });
  for (const link of RECIPE_LINKS[name]) {
    const { bin } = JSON.parse(readFileSync(join(modules, link, "package.json"), "utf8")) as {
      bin?: Record<string, string>;
    };
    for (const [command, target] of Object.entries(bin ?? {}))
      symlinkSync(join(modules, link, target), join(dir, "node_modules/.bin", command));
  }
  return dir;
}

/** Runs a recipe's commands in order, stopping at the first that fails. */
async function runCommands(commands: string[], dir: string, env: Record<string, string | undefined>): Promise<Ran> {
  let last: Ran = { code: 0, stdout: "", stderr: "" };
  for (const command of commands) {
    const [file, ...args] = command.split(" ");
    last = await run(file, args, { cwd: dir, env });
    if (last.code !== 0) return { ...last, stderr: `${command}:\n${last.stderr}` };
  }
  return last;
}

describe("the documentation's recipes, as written", () => {
  const recipes = docRecipes();
  const shared = recipes.get("shared")!;
  const workers = recipes.get("workers")?.files ?? {};
  /** "workers-memory" is the Workers recipe with its own globalSetup: the other files as written. */
  const base: Record<string, Record<string, string>> = { "workers-memory": workers };
  /** A recipe's PATH: its own node_modules/.bin (the bins npm links), then this repository's (Node 24, deno, bun). */
  const binPath = (dir: string) => `${join(dir, "node_modules/.bin")}:${join(modules, ".bin")}:${process.env.PATH}`;

  it("covers Workers (nodes it starts, on memory nodes, nodes you run), Hono on Node, memoryNodes, Deno, Bun and both migration guides; each says what to install and how to run it", () => {
    expect(shared.files["package.json"]).toBeDefined();
    expect(JSON.parse(shared.files["package.json"])).toMatchObject({ type: "module" });
    const named = [...recipes.keys()].filter((name) => name !== "shared");
    expect(named.sort()).toEqual(Object.keys(RECIPE_LINKS).sort());
    for (const [name, recipe] of recipes) {
      if (name === "shared") continue;
      expect(recipe.tarball, `${name}: an install line names the tarball`).toBe(true);
      expect([...recipe.installs].sort(), `${name}: what its install lines name`).toEqual(
        [...RECIPE_LINKS[name]].sort(),
      );
      expect(recipe.commands.length, `${name}: a command that runs it`).toBeGreaterThan(0);
    }
  });

  for (const [name, recipe] of recipes) {
    if (name === "shared" || name === "workers-running" || !(name in RECIPE_LINKS)) continue;
    it(`${name}: ${recipe.commands.join(" && ")}`, async () => {
      const dir = recipeProject(name, recipe, shared, { base: base[name] });
      // What `npx edge-redlock dev --out .env` writes, for the recipes that read `.env`.
      if (recipe.commands.some((c) => c.includes(".env"))) writeFileSync(join(dir, ".env"), devVars());
      const ran = await runCommands(recipe.commands, dir, { PATH: binPath(dir) });
      ok(ran, recipe.commands.join(" && "));
      if (name.startsWith("from-")) {
        // The guide's "after" snippet type-checks strictly against the package, as it runs.
        writeFileSync(
          join(dir, "tsconfig.json"),
          json({
            compilerOptions: {
              target: "ES2022",
              module: "NodeNext",
              moduleResolution: "NodeNext",
              lib: ["ES2022"],
              types: ["node"],
              strict: true,
              skipLibCheck: false,
              noEmit: true,
              allowImportingTsExtensions: true,
            },
            include: ["*.ts"],
          }),
        );
        mkdirSync(join(dir, "node_modules/@types"), { recursive: true });
        symlinkSync(join(modules, "@types/node"), join(dir, "node_modules/@types/node"), "dir");
        ok(await run(tool("tsc"), ["-p", dir], { cwd: dir }), "tsc (the after snippet)");
      }
    }, 120_000);
  }

  it('without "type": "module" the Workers recipe fails with the error the page quotes', async () => {
    const quoted = /```text\nError: (Failed to resolve "@cloudflare\/vitest-plugin"[^\n]*)\n```/.exec(
      readFileSync(join(repo, "docs/testing.md"), "utf8"),
    )?.[1];
    expect(quoted).toBeDefined();
    const recipe = recipes.get("workers-memory")!;
    const dir = recipeProject("workers-memory", recipe, shared, {
      base: workers,
      packageJson: ({ type: _type, ...rest }) => rest,
      folder: "recipe-workers-commonjs",
    });
    const ran = await runCommands(recipe.commands, dir, {
      PATH: binPath(dir),
    });
    expect(ran.code).not.toBe(0);
    expect(ran.stdout + ran.stderr).toContain(quoted);
  }, 120_000);
});

describe('the "nodes you run yourself" Workers recipe', () => {
  const recipes = docRecipes();
  const recipe = recipes.get("workers-running") ?? { files: {}, installs: [], tarball: false, commands: [""] };
  const command = recipe.commands.at(-1) ?? "";
  // "The install, the test, the Worker and wrangler.toml are the ones above."
  const {
    "vitest.config.ts": _config,
    "test/local-nodes.ts": _setup,
    ...workers
  } = recipes.get("workers")?.files ?? {};

  it(`passes with npx edge-redlock dev running, and with the nodes stopped says so in one line, before any test and without workerd's flood (${command})`, async () => {
    const dir = recipeProject("workers-running", recipe, recipes.get("shared")!, { base: workers });
    linkBins(dir);
    const env = { PATH: `${join(dir, "node_modules/.bin")}:${join(modules, ".bin")}:${process.env.PATH}` };
    const [file, ...args] = command.split(" ");

    const nodes = await background(["npx", "edge-redlock", "dev"], {
      cwd: dir,
      env,
      until: /local nodes running; their variables are in /,
    });
    ok(await run(file, args, { cwd: dir, env }), `${command} (nodes running)`);
    await stop(nodes);

    const down = await run(file, args, { cwd: dir, env });
    const said = down.stdout + down.stderr;
    expect(down.code, said).not.toBe(0);
    expect(said).toMatch(
      /edge-redlock: the local nodes in \.dev\.vars are not running \(UPSTASH_REDIS_REST_URL_1 127\.0\.0\.1:\d+: ECONNREFUSED; .*UPSTASH_REDIS_REST_URL_5 127\.0\.0\.1:\d+: ECONNREFUSED\)\. Start them in another terminal: npx edge-redlock dev/,
    );
    expect(said).not.toContain("Network connection lost");
    expect(said).not.toMatch(/pays an order once/); // no test ran

    // The control: the same run without the check shows the flood the check spares the user.
    writeFileSync(
      join(dir, "vitest.config.ts"),
      recipe.files["vitest.config.ts"].replace(/\n\s*test: \{ globalSetup: \[[^\]]*\] \},/, ""),
    );
    const flood = await run(file, args, { cwd: dir, env });
    expect(flood.code).not.toBe(0);
    expect(flood.stdout + flood.stderr).toContain("Network connection lost");
  }, 180_000);
});

/**
 * An example's README, as the test reads it: `<!-- example: <step> -->` before a ```sh block, each line of
 * the block a command (after `#`: a comment). Steps: pack (in the repository root), install, nodes (a
 * second terminal, runs until stopped), check, serve (runs until stopped).
 */
function exampleSteps(name: string): Record<"pack" | "install" | "nodes" | "check" | "serve", string[]> {
  const readme = readFileSync(join(repo, "examples", name, "README.md"), "utf8");
  const steps: Record<string, string[]> = {};
  for (const [, step, block] of readme.matchAll(/<!-- example: (\w+) -->\n```sh\n([\s\S]*?)\n```/g)) {
    steps[step] = block
      .split("\n")
      .map((line) => line.replace(/(^|\s)#.*$/, "").trim())
      .filter(Boolean);
  }
  for (const step of ["pack", "install", "nodes", "check", "serve"])
    expect(steps[step], `${name}/README.md has no "${step}" block`).toBeDefined();
  return steps as Record<"pack" | "install" | "nodes" | "check" | "serve", string[]>;
}

interface ExampleSpec {
  /** The folder under examples/. */
  name: string;
  /** The file `nodes` writes the variables into. */
  envFile: string;
  /** What the test adds to the serve command so that it listens on a free port (the only change it makes). */
  port: (port: number) => { args?: string[]; env?: Record<string, string> };
  /** The server's counter routes' prefix. */
  prefix: string;
  /** How the test knows the server is up: a line it prints (capturing its base URL), else a URL that answers. */
  ready: (port: number) => RegExp | string;
}

const EXAMPLES: ExampleSpec[] = [
  {
    name: "cloudflare-worker",
    envFile: ".dev.vars",
    port: (port) => ({
      args: ["--", "--port", String(port), "--ip", "127.0.0.1", "--show-interactive-dev-session=false"],
    }),
    prefix: "",
    ready: (port) => `http://127.0.0.1:${port}/counter/ready`,
  },
  {
    name: "vercel-edge",
    envFile: ".env.local",
    port: (port) => ({ args: ["--", "--port", String(port), "--hostname", "127.0.0.1"] }),
    prefix: "/api",
    ready: (port) => `http://127.0.0.1:${port}/api/counter/ready`,
  },
  {
    name: "deno-deploy",
    envFile: ".env",
    port: () => ({ env: { PORT: "0" } }),
    prefix: "",
    ready: () => /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  },
  {
    name: "bun",
    envFile: ".env",
    port: () => ({ env: { PORT: "0" } }),
    prefix: "",
    ready: () => /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  },
  {
    name: "node",
    envFile: ".env",
    port: () => ({ env: { PORT: "0" } }),
    prefix: "",
    ready: () => /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  },
];

/**
 * What every example command runs with: this repository's node_modules/.bin first on PATH (Node 24, deno,
 * bun: a user's Node ≥ 22.12 and runtimes), npm told to use its cache before the registry (packages come
 * from the npm registry as a user's would; the cache makes a second run fast), and none of vitest's own
 * NODE_ENV=test (with it, next dev reads .env.test.local instead of .env.local).
 */
const exampleEnv = (): Record<string, string | undefined> => ({
  NODE_ENV: undefined,
  PATH: `${join(modules, ".bin")}:${process.env.PATH}`,
  npm_config_prefer_offline: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false",
  NEXT_TELEMETRY_DISABLED: "1",
});

/** Starts a long-running command in its own process group; resolves once `until` finds its output. */
function background(
  command: string[],
  options: { cwd: string; env: Record<string, string | undefined>; until: RegExp },
): Promise<ChildProcess> {
  const [file, ...args] = command;
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: { ...process.env, ...quiet, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.add(child);
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${command.join(" ")} did not get ready within 60 s:\n${output}`)),
      60_000,
    );
    const onData = (chunk: Buffer) => {
      output += String(chunk);
      if (options.until.test(output)) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${command.join(" ")} exited (${code}):\n${output}`));
    });
  });
}

/**
 * Where an example runs. "clone": in examples/ of a clone after `npm ci` (the clone's node_modules is this
 * repository's, so its bins, Node 24, deno and bun among them, sit up the tree as they would), run with that
 * node_modules/.bin first on PATH, as npm scripts and npx run in a clone. "copy": the folder copied out, beside
 * the tarball, on the Node its README states: the system's when it is at least the README's "Node ≥ x.y" (or the
 * README names none), else this repository's; deno and bun from this repository.
 */
type Place = "clone" | "copy";

function placeExample(name: string, place: Place): { dir: string; env: Record<string, string | undefined> } {
  const root = join(scratch, place);
  if (place === "clone" && !readdirSync(scratch).includes("clone")) {
    mkdirSync(root);
    symlinkSync(modules, join(root, "node_modules"), "dir");
    for (const file of ["package.json", "package-lock.json"]) cpSync(join(repo, file), join(root, file));
  }
  mkdirSync(root, { recursive: true });
  cpSync(tarball, join(root, tarball.split("/").pop()!));
  const dir = join(root, "examples", name);
  cpSync(join(repo, "examples", name), dir, {
    recursive: true,
    filter: (path) => !/\/(node_modules|\.next|\.wrangler)$|\.dev\.vars$|\/\.env(\.local)?$/.test(path),
  });
  if (place === "clone") return { dir, env: exampleEnv() };

  const runtimes = join(scratch, "runtimes");
  if (!readdirSync(scratch).includes("runtimes")) {
    mkdirSync(runtimes);
    for (const bin of ["deno", "bun", "bunx"]) symlinkSync(join(modules, ".bin", bin), join(runtimes, bin));
  }
  const system = (process.env.PATH ?? "")
    .split(":")
    .filter((entry) => !entry.includes("node_modules"))
    .join(":");
  const systemNode = spawnSync("node", ["--version"], { env: { PATH: system }, encoding: "utf8" }).stdout ?? "";
  const [major, minor] = (/^v(\d+)\.(\d+)/.exec(systemNode) ?? [0, 0, 0]).slice(1).map(Number);
  const stated = /Node ≥ (\d+)(?:\.(\d+))?/.exec(readFileSync(join(dir, "README.md"), "utf8"));
  const [needMajor, needMinor] = stated ? [Number(stated[1]), Number(stated[2] ?? 0)] : [0, 0];
  const fits = major > needMajor || (major === needMajor && minor >= needMinor);
  const node = fits ? [] : [join(modules, "node", "bin")];
  return { dir, env: { ...exampleEnv(), PATH: [runtimes, ...node, system].join(":") } };
}

describe("the examples, each as its README says: in a clone after npm ci, and copied out beside the tarball", () => {
  for (const [spec, place] of EXAMPLES.flatMap((spec) => (["clone", "copy"] as const).map((p) => [spec, p] as const))) {
    it(`${spec.name} (${place}): install, local nodes, check, serve; the counter holds the lock`, async () => {
      const steps = exampleSteps(spec.name);
      // The README's first step is what beforeAll ran in the repository root (npm ci is this repository's install).
      expect(steps.pack).toEqual(["npm ci && npm pack"]);
      const pkg = JSON.parse(readFileSync(join(repo, "examples", spec.name, "package.json"), "utf8")) as {
        dependencies: Record<string, string>;
      };
      expect(pkg.dependencies["edge-redlock"]).toBe(`file:../../${tarball.split("/").pop()}`);

      const { dir, env } = placeExample(spec.name, place);
      const node = spawnSync("node", ["--version"], { env: { ...process.env, ...env }, encoding: "utf8" }).stdout;
      for (const line of steps.install)
        ok(await run(...splitCommand(line), { cwd: dir, env }), `${line} (in the ${place}, on Node ${node.trim()})`);

      const [nodesCommand] = steps.nodes;
      const nodes = await background(nodesCommand.split(" "), {
        cwd: dir,
        env,
        until: /local nodes running; their variables are in /,
      });
      try {
        const written = readFileSync(join(dir, spec.envFile), "utf8");
        const vars = Object.fromEntries(
          written
            .split("\n")
            .filter((l) => l.includes("="))
            .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
        const holderNodes = [1, 2, 3, 4, 5].map((n) => ({
          url: vars[envNames(n).url],
          token: vars[envNames(n).token],
        }));
        for (const line of steps.check) ok(await run(...splitCommand(line), { cwd: dir, env }), line);

        const [serveCommand] = steps.serve;
        const port = await freePort();
        const extra = spec.port(port);
        const [file, ...args] = serveCommand.split(" ");
        const ready = spec.ready(port);
        const base = await serve(file, [...args, ...(extra.args ?? [])], {
          cwd: dir,
          env: { ...env, ...extra.env },
          ready,
        });
        const origin = new URL(base).origin + spec.prefix;
        await exerciseCounter(overHttp(origin), spec.name, holderNodes);

        if (spec.name === "cloudflare-worker") {
          // using() inside ctx.waitUntil: answered 202 at once, the increments land after the responses.
          const accepted = await Promise.all(
            Array.from({ length: 3 }, () => fetch(`${origin}/counter/worker-bg/background`, { method: "POST" })),
          );
          expect(accepted.map((r) => r.status)).toEqual([202, 202, 202]);
          let value = 0;
          for (let i = 0; i < 100 && value < 3; i++) {
            value = ((await (await fetch(`${origin}/counter/worker-bg`)).json()) as { value: number }).value;
            if (value < 3) await new Promise((r) => setTimeout(r, 100));
          }
          expect(value).toBe(3);
        }
      } finally {
        await stop(nodes);
      }
    }, 240_000);
  }
});

/** A README command line as file and arguments (`a && b` is not used in the steps the test runs). */
function splitCommand(line: string): [string, string[]] {
  expect(line, "one command per line").not.toMatch(/&&|\||;|'|"/);
  const [file, ...args] = line.split(/\s+/);
  return [file, args];
}
