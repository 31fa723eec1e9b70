// An Upstash-compatible REST bridge in front of one real redis-server, with fault injection.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { BadCommand, encodeReply, errorText, toCommand, toCommands } from "./rest-protocol.ts";
import { delays, parseSpread, type LatencySpread } from "./latency-spread.ts";
import { KeyLockingShim } from "./script-flags.ts";

/** What the bridge answers instead of a correct reply. */
export type Garbage = "html" | "text" | "json-shape" | "truncated" | "empty";

/** Faults applied to every data request of one bridge, in this order: hang, latency, status, garbage. */
export interface Faults {
  /** Added before the command runs. */
  latencyMs: number;
  /** Jitter and retransmits on top of `latencyMs`, from a seeded PRNG (a WAN); null: the latency exactly. */
  spread: LatencySpread | null;
  /** Accept and never answer until cleared. */
  hang: boolean;
  /** Answer this HTTP status with a JSON error body instead of running the command. */
  status: number | null;
  /** Answer 200 with a body that is not a valid reply. */
  garbage: Garbage | null;
  /**
   * Pass scripts with Upstash's `allow-key-locking` shebang flag to Redis unchanged, so Redis rejects
   * them (a REST proxy in front of plain Redis). Default false: the flag is accepted, as Upstash does.
   */
  rejectKeyLocking: boolean;
}

/** Per-bridge request counters, reset-able over the admin API. */
export interface Counters {
  /** Data requests received (any path, before auth and faults). */
  received: number;
  /** Requests answered with a real Redis reply. */
  answered: number;
  /** Requests whose client went away before the answer. */
  abandoned: number;
  /** Requests waiting in a hang or a latency delay right now. */
  waiting: number;
  /** Requests received and not yet answered or abandoned, right now. */
  inFlight: number;
  /** Commands run, by lower-case name (pipelines count each command). */
  commands: Record<string, number>;
  /** Script commands (EVAL, EVALSHA, SCRIPT LOAD) whose script carries Upstash's key-locking flag. */
  flaggedScripts: number;
  /** Requests to `/pipeline`. */
  pipelines: number;
}

const NO_FAULTS: Faults = { latencyMs: 0, spread: null, hang: false, status: null, garbage: null, rejectKeyLocking: false };

const GARBAGE_BODIES: Record<Garbage, { type: string; body: string }> = {
  html: { type: "text/html", body: "<html><body><h1>502 Bad Gateway</h1></body></html>" },
  text: { type: "text/plain", body: "upstream said: {not json" },
  "json-shape": { type: "application/json", body: '{"value":"OK","granted":true}' },
  truncated: { type: "application/json", body: '{"result":"T0' },
  empty: { type: "application/json", body: "" },
};

export interface BridgeOptions {
  redisPort: number;
  token: string;
}

/** One REST bridge: `url` speaks the Upstash protocol, `adminUrl` takes fault controls. */
export class Bridge {
  readonly token: string;
  readonly redisPort: number;
  faults: Faults = { ...NO_FAULTS };
  counters: Counters = emptyCounters();
  /** Hook for process controls, set by the cluster. */
  onAdmin?: (action: string) => Promise<unknown>;
  /** Called after every fault change (the cluster mirrors latency and hang onto its TCP proxy). */
  onFaults?: (faults: Faults) => void;

  #shared: Redis;
  #idle: Redis[] = [];
  #all = new Set<Redis>();
  #hung = new Set<() => void>();
  #keyLocking = new KeyLockingShim();
  #delay = delays(null);
  #data: Server;
  #admin: Server;
  #dataPort = 0;
  #adminPort = 0;

  constructor(options: BridgeOptions) {
    this.token = options.token;
    this.redisPort = options.redisPort;
    this.#shared = this.#connection(false);
    this.#data = createServer((req, res) => void this.#serveData(req, res));
    this.#admin = createServer((req, res) => void this.#serveAdmin(req, res));
  }

  get url(): string {
    return `http://127.0.0.1:${this.#dataPort}`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.#adminPort}`;
  }

  async start(): Promise<void> {
    await this.ready();
    this.#dataPort = await listen(this.#data);
    this.#adminPort = await listen(this.#admin);
  }

  /** Resolves once the bridge's Redis connection is usable (after start or a restart). */
  async ready(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#shared.status !== "ready") {
      if (Date.now() > deadline) throw new Error(`bridge could not reach redis-server on port ${this.redisPort}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async stop(): Promise<void> {
    this.#releaseHung();
    this.#data.closeAllConnections();
    this.#admin.closeAllConnections();
    await Promise.all([close(this.#data), close(this.#admin)]);
    for (const conn of this.#all) conn.disconnect();
  }

  /** Merges fault settings; clearing `hang` lets the hung requests go on. */
  setFaults(patch: Partial<Faults>): void {
    this.faults = { ...this.faults, ...patch };
    if (patch.spread !== undefined) this.#delay = delays(patch.spread);
    this.#keyLocking.accept = !this.faults.rejectKeyLocking;
    if (!this.faults.hang) this.#releaseHung();
    this.onFaults?.(this.faults);
  }

  resetCounters(): void {
    this.counters = { ...emptyCounters(), waiting: this.counters.waiting, inFlight: this.counters.inFlight };
  }

  state(): { faults: Faults; counters: Counters } {
    return { faults: this.faults, counters: this.counters };
  }

  #connection(lazy: boolean): Redis {
    const conn = new Redis({
      host: "127.0.0.1",
      port: this.redisPort,
      lazyConnect: lazy,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    conn.on("error", () => {});
    this.#all.add(conn);
    return conn;
  }

  #releaseHung(): void {
    for (const release of this.#hung) release();
    this.#hung.clear();
  }

  async #serveData(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.counters.inFlight++;
    try {
      await this.#answer(req, res);
    } finally {
      this.counters.inFlight--;
    }
  }

  async #answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isLoopback(req)) return send(res, 403, { error: "loopback only" });
    this.counters.received++;
    const body = await readBody(req);
    if (req.method !== "POST") return send(res, 405, { error: "use POST" });
    if (req.headers.authorization !== `Bearer ${this.token}`) return send(res, 401, { error: "Unauthorized" });

    const gone = clientGone(res);
    if (!(await this.#suffer(gone))) {
      this.counters.abandoned++;
      return;
    }
    if (this.faults.status !== null) return send(res, this.faults.status, { error: `injected HTTP ${this.faults.status}` });
    if (this.faults.garbage !== null) {
      const garbage = GARBAGE_BODIES[this.faults.garbage];
      res.writeHead(200, { "content-type": garbage.type });
      return void res.end(garbage.body);
    }

    const base64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    const path = (req.url ?? "/").split("?")[0].replace(/\/+$/, "") || "/";
    try {
      const parsed = JSON.parse(body || "null") as unknown;
      const reply = await this.#run(path, parsed, base64);
      if (gone.signal.aborted) {
        this.counters.abandoned++;
        return;
      }
      this.counters.answered++;
      send(res, 200, reply);
    } catch (error) {
      if (error instanceof SyntaxError) return send(res, 400, { error: "ERR request body is not JSON" });
      if (error instanceof NotFound) return send(res, 404, { error: error.message });
      if (error instanceof BadCommand) return send(res, 400, { error: error.message });
      if (isConnectionError(error)) return send(res, 503, { error: `redis unavailable: ${errorText(error)}` });
      this.counters.answered++;
      send(res, 400, { error: errorText(error) });
    }
  }

  /** Applies hang and latency; false when the client left meanwhile. */
  async #suffer(gone: { signal: AbortSignal }): Promise<boolean> {
    if (!this.faults.hang && this.faults.latencyMs <= 0 && !this.faults.spread) return true;
    this.counters.waiting++;
    try {
      if (this.faults.hang) {
        await new Promise<void>((resolve) => {
          const release = () => resolve();
          this.#hung.add(release);
          gone.signal.addEventListener("abort", () => {
            this.#hung.delete(release);
            resolve();
          });
        });
      }
      const delay = this.#delay(this.faults.latencyMs);
      if (delay > 0 && !gone.signal.aborted) await sleep(delay, gone.signal);
    } finally {
      this.counters.waiting--;
    }
    return !gone.signal.aborted;
  }

  async #run(path: string, body: unknown, base64: boolean): Promise<unknown> {
    if (path === "/") {
      const command = toCommand(body);
      this.#count(command);
      const reply = await this.#shared.callBuffer(...this.#toRedis(command));
      return { result: encodeReply(this.#keyLocking.loadedSha(command) ?? reply, base64) };
    }
    if (path === "/pipeline" || path === "/multi-exec") {
      const commands = toCommands(body);
      if (path === "/pipeline") this.counters.pipelines++;
      const conn = path === "/pipeline" ? this.#shared : await this.#dedicated();
      try {
        const batch = path === "/pipeline" ? conn.pipeline() : conn.multi();
        for (const command of commands) {
          this.#count(command);
          batch.callBuffer(...this.#toRedis(command));
        }
        const replies = await batch.exec();
        if (replies === null) throw new Error("EXECABORT Transaction discarded");
        return replies.map(([error, reply], i) =>
          error ? { error: errorText(error) } : { result: encodeReply(this.#keyLocking.loadedSha(commands[i]) ?? reply, base64) },
        );
      } finally {
        if (conn !== this.#shared) this.#idle.push(conn);
      }
    }
    throw new NotFound(`no such endpoint: ${path}`);
  }

  #toRedis(command: string[]): [string, ...string[]] {
    const [name, ...args] = this.#keyLocking.rewrite(command);
    return [name, ...args];
  }

  /** A connection nobody else uses while a transaction is open on it. */
  async #dedicated(): Promise<Redis> {
    const idle = this.#idle.pop();
    if (idle && idle.status === "ready") return idle;
    if (idle) {
      this.#all.delete(idle);
      idle.disconnect();
    }
    const conn = this.#connection(true);
    await conn.connect();
    return conn;
  }

  #count(command: string[]): void {
    const name = command[0].toLowerCase();
    this.counters.commands[name] = (this.counters.commands[name] ?? 0) + 1;
    if (this.#keyLocking.carriesFlag(command)) this.counters.flaggedScripts++;
  }

  async #serveAdmin(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isLoopback(req)) return send(res, 403, { error: "loopback only" });
    const body = await readBody(req);
    const path = (req.url ?? "/").split("?")[0];
    try {
      if (req.method === "GET" && path === "/state") return send(res, 200, await this.#fullState());
      if (req.method !== "POST") return send(res, 405, { error: "use POST (or GET /state)" });
      if (path === "/faults") this.setFaults(parseFaults(body));
      else if (path === "/reset") {
        this.setFaults({ ...NO_FAULTS });
        this.resetCounters();
        this.#keyLocking.forget();
      } else if (path === "/counters/reset") this.resetCounters();
      else if (path.startsWith("/redis/") && this.onAdmin) await this.onAdmin(path.slice("/redis/".length));
      else return send(res, 404, { error: `no such admin endpoint: ${path}` });
      send(res, 200, await this.#fullState());
    } catch (error) {
      send(res, 400, { error: errorText(error) });
    }
  }

  async #fullState(): Promise<unknown> {
    const redis = this.onAdmin ? await this.onAdmin("state") : undefined;
    return { ...this.state(), redis };
  }
}

class NotFound extends Error {}

function emptyCounters(): Counters {
  return { received: 0, answered: 0, abandoned: 0, waiting: 0, inFlight: 0, commands: {}, flaggedScripts: 0, pipelines: 0 };
}

function parseFaults(body: string): Partial<Faults> {
  const raw = JSON.parse(body || "{}") as Record<string, unknown>;
  const patch: Partial<Faults> = {};
  if ("latencyMs" in raw) patch.latencyMs = Number(raw.latencyMs) || 0;
  if ("spread" in raw) patch.spread = parseSpread(raw.spread);
  if ("hang" in raw) patch.hang = Boolean(raw.hang);
  if ("status" in raw) patch.status = raw.status === null ? null : Number(raw.status);
  if ("rejectKeyLocking" in raw) patch.rejectKeyLocking = Boolean(raw.rejectKeyLocking);
  if ("garbage" in raw) {
    if (raw.garbage !== null && !(String(raw.garbage) in GARBAGE_BODIES)) throw new Error(`unknown garbage kind ${String(raw.garbage)}`);
    patch.garbage = raw.garbage === null ? null : (String(raw.garbage) as Garbage);
  }
  return patch;
}

/** Anything but a reply from Redis itself (ioredis' ReplyError) means the server could not be reached. */
function isConnectionError(error: unknown): boolean {
  return (error as Error)?.name !== "ReplyError";
}

function isLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? "";
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

function clientGone(res: ServerResponse): { signal: AbortSignal } {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
