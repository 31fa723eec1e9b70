// One real redis-server process on 127.0.0.1: start, kill, pause, resume, restart empty.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

/** Where Homebrew and hand builds put redis-server, which a GUI shell's PATH may lack (/usr/bin is on every PATH). */
const SEARCH_PATH = ["/usr/local/bin", "/opt/homebrew/bin"];

/** redis-server is not installed and could not be (not root, no apt-get, or installing is turned off). */
export class MissingRedisServer extends Error {}

/**
 * Finds redis-server on PATH or in the usual places; installs it with apt-get when root, unless
 * `EDGE_REDLOCK_NO_INSTALL=1` says never to install anything.
 */
export function ensureRedisServer(): string {
  const found = findRedisServer();
  if (found) return found;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const hasApt = existsSync("/usr/bin/apt-get");
  const allowed = !/^(1|true|yes)$/i.test(process.env.EDGE_REDLOCK_NO_INSTALL ?? "");
  if (!isRoot || !hasApt || !allowed) {
    throw new MissingRedisServer(
      "redis-server is not installed. Install it with `sudo apt-get update && sudo apt-get install -y redis-server` " +
        "(Debian/Ubuntu; on Windows the same inside WSL) or `brew install redis` (macOS), then run this again.",
    );
  }
  process.stderr.write("redis-server is missing: installing it with apt-get ...\n");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [
    ["update", "-qq"],
    ["install", "-y", "-qq", "redis-server"],
  ]) {
    const r = spawnSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env });
    if (r.status !== 0)
      throw new Error(`apt-get ${args.join(" ")} failed (exit ${r.status}); install redis-server by hand.`);
  }
  const installed = findRedisServer();
  if (!installed) throw new Error("apt-get reported success but redis-server is still not found.");
  return installed;
}

/** The redis-server binary at `path` if given and there, else on PATH or in the usual places, if any. */
export function findRedisServer(path?: string): string | undefined {
  if (path !== undefined) return existsSync(path) ? path : undefined;
  const dirs = [...(process.env.PATH ?? "").split(":").filter(Boolean), ...SEARCH_PATH];
  for (const dir of dirs) {
    const candidate = `${dir}/redis-server`;
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * A free TCP port on 127.0.0.1 for a server that will be killed and restarted on the same port: below
 * the kernel's ephemeral range where possible, so that while the server is down no outgoing connection
 * (the bridges and clients open hundreds) can be given its port and block the restart.
 */
export async function freeServerPort(): Promise<number> {
  const ephemeralLow = ephemeralRangeStart();
  if (ephemeralLow !== undefined && ephemeralLow > 20_000) {
    for (let tries = 0; tries < 50; tries++) {
      const port = 10_000 + Math.floor(Math.random() * (ephemeralLow - 10_000));
      if (await canListen(port)) return port;
    }
  }
  return freePort();
}

function ephemeralRangeStart(): number | undefined {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : undefined;
  } catch {
    return undefined;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export type RedisProcessState = "running" | "paused" | "killed";

/** A redis-server started by the shell of {@link launchFromShell}: its pid, and what it printed so far. */
interface Launched {
  pid: number;
  output(): string;
  /** Deletes what it printed (once it is gone). */
  forget(): void;
}

let shell: { start(binary: string, args: string[]): Promise<Launched> } | undefined;

/**
 * Starts every later redis-server of this process from a shell started now. A process that forks a child holds
 * its threads up while the kernel copies its memory map: 70–140 ms for `spawn` in a Node process with 23 busy worker
 * threads and 2.7 GB, and 0.4–1.3 s at each restart of a node in the chaos bed, whose one process runs the five
 * bridges and every client, so that every client's attempt timed out on every node then. Call it while the process
 * is still small (the shell is forked once, then); the shell forks the servers. Linux and macOS (`/bin/sh`).
 * @example
 * launchFromShell(); // before the clients start
 */
export function launchFromShell(): void {
  if (shell) return;
  const sh = spawn("/bin/sh", [], { stdio: ["pipe", "pipe", "ignore"] });
  // The shell never keeps this process alive, except while a start waits for its pid.
  sh.unref();
  const pids = sh.stdout as unknown as { ref(): void; unref(): void };
  pids.unref();
  (sh.stdin as unknown as { unref?(): void }).unref?.();
  const waiting: ((pid: number) => void)[] = [];
  let buffered = "";
  sh.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      waiting.shift()?.(Number(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
    }
    if (waiting.length === 0) pids.unref();
  });
  let started = 0;
  const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;
  shell = {
    start(binary, args) {
      const log = join(tmpdir(), `edge-redlock-redis-${process.pid}-${++started}.log`);
      return new Promise((resolve) => {
        waiting.push((pid) =>
          resolve({
            pid,
            output: () => (existsSync(log) ? readFileSync(log, "utf8") : ""),
            forget: () => rmSync(log, { force: true }),
          }),
        );
        pids.ref();
        sh.stdin?.write(`${[binary, ...args].map(quote).join(" ")} > ${quote(log)} 2>&1 & echo $!\n`);
      });
    },
  };
}

/** The options every redis-server of the bed starts with: no persistence, so every start is empty. */
const SERVER_ARGS = (port: number) => [
  "--port",
  String(port),
  "--bind",
  "127.0.0.1",
  "--save",
  "",
  "--appendonly",
  "no",
  "--protected-mode",
  "no",
  "--loglevel",
  "warning",
];

/** A redis-server process bound to one port that can be killed, paused and restarted empty. */
export class RedisProcess {
  readonly port: number;
  readonly binary: string;
  #child: ChildProcess | undefined;
  /** Its pid when a shell started it (see {@link launchFromShell}). */
  #launched: Launched | undefined;
  #state: RedisProcessState = "killed";

  constructor(binary: string, port: number) {
    this.binary = binary;
    this.port = port;
  }

  get state(): RedisProcessState {
    return this.#state;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the process (no persistence, so every start is empty) and waits until it accepts commands. */
  async start(): Promise<void> {
    if (shell) {
      const launched = await shell.start(this.binary, SERVER_ARGS(this.port));
      const { pid, output } = launched;
      this.#launched = launched;
      let starting = true;
      const exited = (async () => {
        while (starting) {
          if (!alive(pid))
            throw new Error(`redis-server on port ${this.port} exited: ${output().trim().slice(-2_000)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      exited.catch(() => {});
      try {
        await Promise.race([waitForPort(this.port, 5_000), exited]);
      } finally {
        starting = false;
      }
      this.#state = "running";
      return;
    }
    const child = spawn(this.binary, SERVER_ARGS(this.port), { stdio: ["ignore", "pipe", "pipe"] });
    // redis-server logs to stdout (e.g. "Could not create server TCP listening socket"): keep both for the error.
    let stderr = "";
    const keep = (chunk: unknown) => (stderr = (stderr + String(chunk)).slice(-2_000));
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.#child = child;
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code) =>
        reject(new Error(`redis-server on port ${this.port} exited (${code}): ${stderr.trim()}`)),
      ),
    );
    exited.catch(() => {});
    await Promise.race([waitForPort(this.port, 5_000), exited]);
    this.#state = "running";
  }

  /** SIGKILL: the data is gone with the process. Resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    const launched = this.#launched;
    this.#child = undefined;
    this.#launched = undefined;
    this.#state = "killed";
    if (launched !== undefined) {
      signalPid(launched.pid, "SIGCONT");
      signalPid(launched.pid, "SIGKILL");
      await gone(launched.pid);
      return launched.forget();
    }
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    signal(child, "SIGCONT");
    signal(child, "SIGKILL");
    // Deno's child_process may not emit "exit" for a killed child: also poll the pid.
    await Promise.race([exited, gone(child.pid)]);
  }

  /** Synchronous SIGKILL for process-exit hooks. */
  forceKill(): void {
    signal(this.#child, "SIGCONT");
    signal(this.#child, "SIGKILL");
    if (this.#launched !== undefined) {
      signalPid(this.#launched.pid, "SIGCONT");
      signalPid(this.#launched.pid, "SIGKILL");
      this.#launched.forget();
    }
  }

  /** SIGSTOP: connections stay open, nothing answers. */
  pause(): void {
    if (this.#state !== "running") throw new Error(`cannot pause a ${this.#state} redis-server`);
    signal(this.#child, "SIGSTOP");
    if (this.#launched !== undefined) signalPid(this.#launched.pid, "SIGSTOP");
    this.#state = "paused";
  }

  /** SIGCONT after pause. */
  resume(): void {
    if (this.#state !== "paused") throw new Error(`cannot resume a ${this.#state} redis-server`);
    signal(this.#child, "SIGCONT");
    if (this.#launched !== undefined) signalPid(this.#launched.pid, "SIGCONT");
    this.#state = "running";
  }

  /** Kill, then start again on the same port with no data. */
  async restartEmpty(): Promise<void> {
    await this.kill();
    // While the port is free, another process may hold it for a moment (a free-port probe of another
    // cluster on this machine): try again a few times before giving up.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.start();
      } catch (error) {
        if (attempt >= 10 || !/Address already in use/.test(String(error))) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** Sends a signal by pid (Deno's ChildProcess.kill does not deliver every signal). */
function signal(child: ChildProcess | undefined, name: NodeJS.Signals): void {
  if (child?.pid) signalPid(child.pid, name);
}

function signalPid(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Whether `pid` runs (a zombie does not), from /proc where there is one. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    if (existsSync("/proc/self")) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** Resolves when `pid` has exited (a zombie counts: the runtime may reap it later), or after 2 s. */
async function gone(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return;
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const probe = new Redis({
      port,
      host: "127.0.0.1",
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    probe.on("error", () => {});
    const ok = await probe
      .connect()
      .then(() => probe.ping())
      .then(
        (reply) => reply === "PONG",
        () => false,
      );
    probe.disconnect();
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
