// checkNodes against the real cluster: healthy, the same database twice, a node down, slow nodes,
// the key-locking flag refused, eviction on, a refused token, credentials in a URL, a node whose scripts (or only
// its flagged scripts) cannot publish, and no secret in any report;
// every script the library may send run on every node: an engine that refuses a write after TIME fails it.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Bridge } from "../../../dev/bridge.ts";
import { RedisBackend } from "../../../dev/redis-backend.ts";
import { SCRIPT_TRIALS } from "../../../src/doctor/script-trials.ts";
import { DELIVERED_WITHOUT_FLAG } from "../../../src/doctor/wakeups.ts";
import { checkNodes, envNames, type DoctorReport } from "../../../src/index.ts";
import { useCluster } from "../fixture.ts";
import { WRITE_AFTER_TIME_ERROR, refusingEngine } from "../refusing-engine.ts";

const env = useCluster();
const configs = () => env.cluster.nodes.map((n) => ({ url: n.url, token: n.token }));
const check = (report: DoctorReport, name: string) => report.checks.find((c) => c.name === name);
const fast = { samples: 2, settleMs: 50 };

/** Probe keys and trial locks left on any node. */
async function leftovers(): Promise<string[]> {
  return (await Promise.all(env.tcp.map((c) => c.keys("edge-redlock-doctor:*")))).flat();
}

function expectNoSecrets(report: DoctorReport, secrets: string[]): void {
  const text = JSON.stringify(report);
  for (const secret of secrets) expect(text).not.toContain(secret);
}

describe("checkNodes", () => {
  it("passes five healthy independent nodes, reports every figure, and leaves no key behind", async () => {
    const report = await checkNodes(configs(), fast);
    expect(report.ok).toBe(true);
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ["config", "ok"],
      ["reachable", "ok"],
      ["scripts", "ok"],
      ["key-locking", "ok"],
      ["independence", "ok"],
      ["latency", "ok"],
      ["clocks", "ok"],
      ["eviction", "ok"],
      ["wakeups", "ok"],
      ["lock", "ok"],
    ]);
    for (const node of report.nodes) {
      expect(node).toMatchObject({
        reachable: true,
        scripts: "ok",
        keyLocking: "accepted",
        eviction: "noeviction",
        sameAs: [],
      });
      expect(node.p50Ms).toBeGreaterThan(0);
      expect(node.p99Ms).toBeGreaterThanOrEqual(node.p50Ms!);
    }
    const p50s = report.nodes.map((n) => n.p50Ms!).sort((a, b) => a - b);
    expect(report.expectedLockLatencyMs).toBe(p50s[2]);
    expect(report.verdict).toMatch(/^OK: 5 independent nodes, quorum 3/);
    expect(await leftovers()).toEqual([]);
    expectNoSecrets(report, [env.cluster.nodes[0].token, ...env.cluster.nodes.map((n) => n.url)]);
  });

  it("finds the same database configured twice behind two different URLs", async () => {
    // A second REST endpoint in front of node 1's redis-server: two regional URLs of one database.
    const twin = new Bridge({
      backend: new RedisBackend(env.cluster.servers[0].port),
      token: env.cluster.nodes[0].token,
    });
    await twin.start();
    try {
      const nodes = configs();
      nodes[4] = { url: twin.url, token: twin.token };
      expect(nodes[4].url).not.toBe(nodes[0].url);
      const report = await checkNodes(nodes, { ...fast, labels: ["A", "B", "C", "D", "E"] });
      expect(report.ok).toBe(false);
      expect(report.nodes.map((n) => n.sameAs)).toEqual([[4], [], [], [], [0]]);
      expect(check(report, "independence")).toEqual({
        name: "independence",
        status: "fail",
        message: "the same database is configured twice: A and E (a probe written on one appeared on the other)",
      });
      expect(report.verdict).toBe("FAIL: independence");
      expect(await leftovers()).toEqual([]);
    } finally {
      await twin.stop();
    }
  });

  it("fails on a node that is down, names it, and still takes the trial lock on the other four", async () => {
    await env.admins[2].kill();
    const refused = { url: "http://127.0.0.1:9", token: "no-such-node-token" }; // the discard port: nothing listens
    const report = await checkNodes([...configs(), refused], { ...fast, labels: ["n1", "n2", "n3", "n4", "n5", "n6"] });
    expect(report.ok).toBe(false);
    expect(report.nodes[2]).toMatchObject({ reachable: false, httpStatus: 503 });
    expect(report.nodes[5].reachable).toBe(false);
    expect(report.nodes[5].error).toMatch(/^network: /);
    const reachable = check(report, "reachable")!;
    expect(reachable.status).toBe("fail");
    expect(reachable.message).toMatch(/^n3: HTTP 503: redis unavailable.*; n6: network: /);
    expect(check(report, "lock")).toMatchObject({ status: "ok" });
    expect(check(report, "lock")!.message).toMatch(/released on every node that answers \(4 of 6\)$/);
    expectNoSecrets(report, [env.cluster.nodes[0].token, "no-such-node-token"]);
  });

  it("warns about one node slower than nodeTimeout, and fails when a quorum is", async () => {
    await env.admins[1].faults({ latencyMs: 250 });
    const one = await checkNodes(configs(), { ...fast, nodeTimeout: 200 });
    expect(one.ok).toBe(true);
    expect(one.nodes[1].p50Ms).toBeGreaterThanOrEqual(250);
    expect(check(one, "latency")).toMatchObject({ status: "warn" });
    expect(check(one, "latency")!.message).toMatch(/node 2: p50 \d+ ms, it times out in every round$/);
    expect(one.expectedLockLatencyMs).toBeLessThan(200);
    // Latency is added before the command runs: an asymmetric delay must not read as a skewed clock.
    expect(check(one, "clocks")).toMatchObject({ status: "ok" });

    await env.admins[3].faults({ latencyMs: 250 });
    await env.admins[4].faults({ latencyMs: 250 });
    const three = await checkNodes(configs(), { ...fast, nodeTimeout: 200 });
    expect(three.ok).toBe(false);
    expect(three.expectedLockLatencyMs).toBeGreaterThanOrEqual(250);
    expect(check(three, "latency")).toMatchObject({ status: "fail" });
    expect(check(three, "latency")!.message).toMatch(/needs the 3rd-fastest node: p50 \d+ ms ≥ nodeTimeout 200 ms/);
  });

  it("reports the key-locking flag as rejected where the node refuses it, and passes", async () => {
    await env.admins[1].faults({ rejectKeyLocking: true });
    const report = await checkNodes(configs(), fast);
    expect(report.ok).toBe(true);
    expect(report.nodes.map((n) => n.keyLocking)).toEqual(["accepted", "rejected", "accepted", "accepted", "accepted"]);
    expect(report.nodes[1].scripts).toBe("ok");
    // Its wakeup check publishes without the flag, as the library's scripts then run there.
    expect(report.nodes.map((n) => n.wakeups)).toEqual(Array(5).fill("delivered"));
    expect(check(report, "key-locking")!.message).toBe(
      "accepted on 4; rejected on node 2: the library falls back to scripts without the flag there",
    );
  });

  it("runs every script the library may send on every node, the fenced acquire included, and leaves none of its keys", async () => {
    await Promise.all(env.tcp.map((c) => c.config("RESETSTAT")));
    const report = await checkNodes(configs(), fast);
    expect(check(report, "scripts")).toEqual({
      name: "scripts",
      status: "ok",
      message: "every script the library sends loads and runs on 5 nodes",
    });
    // Redis' own count of EVALs on each node: the doctor's two, its publish from a script, and one per script run.
    const evals = await Promise.all(
      env.tcp.map(async (c) => Number(/^cmdstat_eval:calls=(\d+)/m.exec(await c.info("commandstats"))?.[1] ?? 0)),
    );
    // The probes, the wakeup check, every trial, the trial lock's first run of each of its three scripts (an EVAL
    // loads it), and the library's probe of PUBLISH from a flagged script, in the request of its first fair acquire.
    expect(evals).toEqual(Array(5).fill(2 + 1 + SCRIPT_TRIALS.length + 3 + 1));
    expect(await leftovers()).toEqual([]);
  });

  it("publishes from a flagged script, as the line's scripts run, and where that is refused, without the flag", async () => {
    await env.admins[1].faults({ refuseScriptPublish: true });
    // Beside it, a node that rejects the flag itself: its scripts, the doctor's publish included, go without it.
    await env.admins[2].faults({ rejectKeyLocking: true });
    const report = await checkNodes(configs(), fast);
    expect(report.nodes[1].keyLocking).toBe("accepted");
    expect(report.nodes[2].keyLocking).toBe("rejected");
    // The library's own probe finds the refusal and sends its scripts that publish there without the flag: they wake.
    expect(report.nodes[1].wakeups).toBe(DELIVERED_WITHOUT_FLAG);
    expect(report.nodes.filter((n) => n.wakeups === "delivered")).toHaveLength(4);
    expect(check(report, "lock")!.status).toBe("ok");
    const wakeups = check(report, "wakeups")!;
    expect(wakeups.status).toBe("ok");
    expect(wakeups.message).toContain(`${report.nodes[1].label}: only from a script without the key-locking flag`);
    expect(await leftovers()).toEqual([]);
  });

  it("warns about a node that delivers nothing, and says to look for what buffers the stream", async () => {
    await env.admins[3].faults({ dropMessages: 1 });
    const report = await checkNodes(configs(), fast);
    expect(report.nodes[3].wakeups).toBe("nothing was delivered");
    const wakeups = check(report, "wakeups")!;
    expect(wakeups.status).toBe("warn");
    expect(wakeups.message).toContain("buffers server-sent events");
    expect(wakeups.message).not.toContain("keep the ttl short");
    expect(await leftovers()).toEqual([]);
  });

  it("warns about a node that refuses PUBLISH inside a script: its waiters are not woken through it", async () => {
    const engine = await refusingEngine(env.cluster.nodes[1].url, "publish");
    try {
      const nodes = configs();
      nodes[1] = { url: engine.url, token: nodes[1].token };
      const report = await checkNodes(nodes, fast);
      const wakeups = check(report, "wakeups")!;
      expect(wakeups.status).toBe("warn");
      expect(report.nodes[1].wakeups).toMatch(
        /^PUBLISH from a script failed \(.*ERR PUBLISH is not allowed in scripts.*; without the flag: PUBLISH from a script failed/,
      );
      expect(report.nodes.filter((n) => n.wakeups === "delivered")).toHaveLength(4);
      expect(wakeups.message).toContain("waiters are not woken through it");
      expectNoSecrets(report, [nodes[1].token]);
    } finally {
      await engine.stop();
    }
  });

  it("fails the scripts check on a node whose engine refuses a write after TIME, naming every run that writes after TIME, where the trial lock passes", async () => {
    const engine = await refusingEngine(env.cluster.nodes[2].url);
    try {
      const nodes = configs();
      nodes[2] = { url: engine.url, token: nodes[2].token };
      const report = await checkNodes(nodes, fast);
      expect(report.ok).toBe(false);
      expect(report.verdict).toBe("FAIL: scripts");
      expect(report.nodes.map((n) => n.scripts)).toEqual(["ok", "ok", "failed", "ok", "ok"]);
      // A line's script reads the node's TIME only where it must tell live entries from expired ones, and the fenced
      // acquires read it before they write: those runs fail there (a fair acquire that joins a line, REQUEUE, the fenced
      // runs, a writer that queues or wakes). The classic scripts' runs pass, and so do the line's runs that found
      // their lines empty (a free fair acquire, a LEAVE with nobody waiting, a reader's acquire and release).
      const failures = report.nodes[2].scriptError!.split("; ");
      const labels = SCRIPT_TRIALS.map((t) => t.label);
      const failed = labels.filter((label) => failures.some((f) => f.startsWith(`${label}: `)));
      const passes = [
        "acquire",
        "acquire (held)",
        "extend",
        "release",
        "fence",
        "semaphore acquire",
        "inspect",
        "read-write inspect",
        "release (lock and permits)",
        "fair acquire",
        "leave",
        "leave (fenced)",
        "fair acquire (again)",
        "leave (requeued)",
        "fair semaphore acquire",
        "read acquire",
        "read extend",
        "read release",
        "leave (writer)",
      ];
      expect(failed).toEqual(labels.filter((label) => !passes.includes(label)));
      expect(failures.length).toBe(failed.length);
      // Each fails at the write, or answers otherwise because a run before it failed there (the REQUEUE's waiter is
      // not ahead; the other's LEAVE finds it granted).
      for (const failure of failures)
        expect(
          failure.includes(WRITE_AFTER_TIME_ERROR) || /: (granted|denied) where the script should/.test(failure),
          failure,
        ).toBe(true);
      expect(report.nodes[2].scriptError).toContain(`fenced acquire: ${WRITE_AFTER_TIME_ERROR}`);
      expect(check(report, "scripts")!.message).toMatch(
        new RegExp(
          `^node 3: ${failed[0].replace(/[()]/g, "\\$&")}: ERR Write commands not allowed after non deterministic`,
        ),
      );
      // What the doctor checked before: the scripts load and a plain lock works there; only the run of every script shows it.
      expect(check(report, "lock")).toMatchObject({ status: "ok" });
      expect(await leftovers()).toEqual([]);
    } finally {
      await engine.stop();
    }
  });

  it("runs the scripts without the flag where the node rejects it, and after the script cache was flushed", async () => {
    await env.admins[1].faults({ rejectKeyLocking: true });
    await Promise.all(env.tcp.map((c) => c.script("FLUSH")));
    const report = await checkNodes(configs(), fast);
    expect(report.nodes.map((n) => n.scripts)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(check(report, "scripts")).toMatchObject({ status: "ok" });
    expect(report.ok).toBe(true);
  });

  it("warns when a node may evict keys", async () => {
    await env.tcp[3].config("SET", "maxmemory-policy", "allkeys-lru");
    try {
      const report = await checkNodes(configs(), fast);
      expect(report.nodes[3].eviction).toBe("allkeys-lru");
      expect(check(report, "eviction")).toMatchObject({
        status: "warn",
        message: expect.stringMatching(/^node 4: allkeys-lru: /),
      });
      expect(report.ok).toBe(true);
    } finally {
      await env.tcp[3].config("SET", "maxmemory-policy", "noeviction");
    }
  });

  it("says which token was refused without printing it, and which URL carries credentials without printing them", async () => {
    const nodes = configs();
    nodes[1] = { url: nodes[1].url, token: "wrong-token-for-this-node" };
    const withUser = new URL(nodes[3].url);
    withUser.username = "someone";
    withUser.password = "hunter2secret";
    nodes[3] = { url: withUser.href, token: nodes[3].token };
    const report = await checkNodes(nodes, fast);
    expect(report.ok).toBe(false);
    expect(report.nodes[1]).toMatchObject({ reachable: false, httpStatus: 401 });
    expect(report.nodes[1].error).toContain("the token was refused");
    expect(report.nodes[3].configError).toBe("the URL carries credentials (user:password@); give the token on its own");
    expect(check(report, "config")!.status).toBe("fail");
    // No trial on a configuration that is wrong, and the report says so instead of leaving the row out.
    expect(check(report, "lock")).toEqual({
      name: "lock",
      status: "skip",
      message: "not tried: the configuration has errors (see config)",
    });
    expectNoSecrets(report, ["wrong-token-for-this-node", "hunter2secret", "someone", env.cluster.nodes[0].token]);
  });

  it("rejects what is not a list of nodes before any request", async () => {
    await expect(checkNodes([])).rejects.toThrow("nodes must hold at least one node");
    await expect(checkNodes(configs(), { samples: 0 })).rejects.toThrow("options.samples");
    await expect(checkNodes(configs(), { labels: ["only one"] })).rejects.toThrow(
      "options.labels must hold 5 non-empty strings",
    );
    const received = (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters.received);
    expect(received).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("edge-redlock doctor (the CLI, from source)", () => {
  const cli = fileURLToPath(new URL("../../../cli/main.ts", import.meta.url));
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const envFile = () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    dirs.push(dir);
    const path = join(dir, ".dev.vars");
    const lines = env.cluster.nodes.flatMap((n, i) => [
      `${envNames(i + 1).url}=${n.url}`,
      `${envNames(i + 1).token}="${n.token}"`,
    ]);
    writeFileSync(path, `# the local cluster\n${lines.join("\n")}\n`);
    return path;
  };
  /** Runs the CLI with only PATH from this environment, so no UPSTASH_* variable leaks in. */
  const run = (args: string[], extraEnv: Record<string, string> = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [cli, ...args],
        { env: { PATH: process.env.PATH ?? "", ...extraEnv } },
        (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
  const secrets = () => [
    env.cluster.nodes[0].token,
    ...env.cluster.nodes.map((n) => n.url),
    ...env.cluster.nodes.map((n) => new URL(n.url).host),
  ];

  it("prints a table and an OK verdict and exits 0 on a healthy cluster (--vars)", async () => {
    const { code, stdout, stderr } = await run(["doctor", "--vars", envFile(), "--samples", "2"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^node +status +first ms +p50 ms +p99 ms +scripts +key-locking +clock ms +eviction +same database as$/m,
    );
    for (let n = 1; n <= 5; n++) expect(stdout).toMatch(new RegExp(`^UPSTASH_REDIS_REST_URL_${n} +ok `, "m"));
    expect(stdout).toMatch(/^OK: 5 independent nodes, quorum 3, a lock takes about [\d.]+ ms$/m);
    for (const secret of secrets()) expect(stdout).not.toContain(secret);
  });

  it("exits 1 naming the variable of a node that is down, and of a token that is refused, never their values", async () => {
    await env.admins[2].kill();
    const vars = Object.fromEntries(
      env.cluster.nodes.flatMap((n, i) => [
        [envNames(i + 1).url, n.url],
        [envNames(i + 1).token, n.token],
      ]),
    );
    vars.UPSTASH_REDIS_REST_TOKEN_4 = "not-the-token-of-node-4";
    const { code, stdout } = await run(["doctor", "--samples", "1"], vars); // from the environment this time
    expect(code).toBe(1);
    expect(stdout).toMatch(/^UPSTASH_REDIS_REST_URL_3 +HTTP 503 /m);
    expect(stdout).toMatch(
      /^FAIL +reachable +UPSTASH_REDIS_REST_URL_3: HTTP 503.*; UPSTASH_REDIS_REST_URL_4: HTTP 401/m,
    );
    expect(stdout).toContain("UPSTASH_REDIS_REST_TOKEN_4 was refused (HTTP 401)");
    expect(stdout).toMatch(/^FAIL: reachable$/m);
    for (const secret of [...secrets(), "not-the-token-of-node-4"]) expect(stdout).not.toContain(secret);
  });

  it("exits 1 on the same database configured twice", async () => {
    const twin = new Bridge({
      backend: new RedisBackend(env.cluster.servers[1].port),
      token: env.cluster.nodes[1].token,
    });
    await twin.start();
    try {
      const path = envFile();
      writeFileSync(
        path,
        readFileSync(path, "utf8")
          .replace(`${envNames(5).url}=${env.cluster.nodes[4].url}`, `${envNames(5).url}=${twin.url}`)
          .replace(`${envNames(5).token}="${env.cluster.nodes[4].token}"`, `${envNames(5).token}=${twin.token}`),
      );
      const { code, stdout } = await run(["doctor", "--env-file", path, "--samples", "1"]);
      expect(code).toBe(1);
      expect(stdout).toMatch(
        /^FAIL +independence +the same database is configured twice: UPSTASH_REDIS_REST_URL_2 and UPSTASH_REDIS_REST_URL_5 /m,
      );
      expect(stdout).not.toContain(twin.url);
    } finally {
      await twin.stop();
    }
  });

  it("exits 2 naming missing variables, and on bad arguments", async () => {
    const missing = await run(["doctor"], {
      UPSTASH_REDIS_REST_URL_1: env.cluster.nodes[0].url,
      UPSTASH_REDIS_REST_TOKEN_1: env.cluster.nodes[0].token,
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      "edge-redlock doctor: not configured: UPSTASH_REDIS_REST_URL_2, UPSTASH_REDIS_REST_TOKEN_2, UPSTASH_REDIS_REST_URL_3, UPSTASH_REDIS_REST_TOKEN_3, UPSTASH_REDIS_REST_URL_4, UPSTASH_REDIS_REST_TOKEN_4, UPSTASH_REDIS_REST_URL_5, UPSTASH_REDIS_REST_TOKEN_5 are missing or empty. Set them in the environment or pass --vars PATH (local nodes: npx edge-redlock dev writes them to .dev.vars)\n",
    );
    expect(missing.stdout + missing.stderr).not.toContain(env.cluster.nodes[0].token);
    expect((await run(["doctor", "--samples", "x"])).code).toBe(2);
    // --vars with a missing file: the CLI's own message, which Node never preempts.
    const missingFile = await run(["doctor", "--vars", "/nonexistent/.dev.vars"]);
    expect(missingFile.code).toBe(2);
    expect(missingFile.stderr).toBe("edge-redlock doctor: cannot read /nonexistent/.dev.vars (ENOENT)\n");
    // Node itself reads a script argument named --env-file when the file is missing, and exits 9
    // before the CLI runs (nodejs/node#54232); either way the path is named and the exit is non-zero.
    const unreadable = await run(["doctor", "--env-file", "/nonexistent/.dev.vars"]);
    expect([2, 9]).toContain(unreadable.code);
    expect(unreadable.stderr).toMatch(
      /(cannot read \/nonexistent\/\.dev\.vars \(ENOENT\)|\/nonexistent\/\.dev\.vars: not found)\n$/,
    );
    expect((await run(["frobnicate"])).code).toBe(2);
  });

  it("--json prints the report as JSON", async () => {
    const { code, stdout } = await run(["doctor", "--env-file", envFile(), "--samples", "1", "--json"]); // the alias
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as DoctorReport;
    expect(report.ok).toBe(true);
    expect(report.nodes.map((n) => n.label)).toEqual([1, 2, 3, 4, 5].map((n) => envNames(n).url));
  });
});
