// An Upstash-compatible REST bridge in front of one node (a real redis-server, or in-process memory nodes),
// with fault injection. Commands, pipelines and transactions as JSON; subscriptions as SSE streams.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Backend, Subscription } from "./backend.ts";
import { FaultGate, GARBAGE_BODIES, NO_FAULTS, parseFaults, type Faults } from "./fault-gate.ts";
import { MAX_REQUEST_BYTES, REQUEST_TOO_LARGE, keySizeError } from "./limits.ts";
import { BadCommand, encodeReply, errorText, toCommand, toCommands, toJson } from "./rest-protocol.ts";
import { KeyLockingShim } from "./script-flags.ts";

export type { Faults, Garbage } from "./fault-gate.ts";

/** Per-bridge request counters, reset-able over the admin API. */
export interface Counters {
  /** Data requests received (any path, before auth and faults). */
  received: number;
  /** Requests answered with a reply of the backend. */
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
  /** Subscription streams open right now (not reset). */
  streams: number;
  /** Messages written to subscription streams. */
  messages: number;
  /** Messages a fault kept from a subscription stream (`dropMessages`, or a `cut` partition). */
  droppedMessages: number;
}

export interface BridgeOptions {
  /** What the bridge runs commands on. */
  backend: Backend;
  token: string;
}

/** A client's own route to the bridge: a listener of its own whose faults hit that client alone. */
export interface LinkState {
  url: string;
  faults: Faults;
}

interface Link {
  server: Server;
  port: number;
  gate: FaultGate;
}

/** One open SSE stream of `/subscribe`. */
interface Stream {
  res: ServerResponse;
  /** The listener it came through (undefined: the node's own URL). */
  link: Link | undefined;
  /** False until its confirmations are written; messages that come sooner wait in `early`. */
  open: boolean;
  early: [channel: string, message: Buffer][];
}

/** Options of {@link Bridge.cutStreams}. */
export interface CutStreams {
  /** Only the streams that came through this link (default: every stream of the node, links' included). */
  link?: string;
  /**
   * End each response properly (the last chunk sent: the client reads the end of its body) instead of
   * dropping the connection mid-body (the client's read fails). Default false.
   */
  graceful?: boolean;
}

/** How long `stop()` waits for a quiet moment before it closes the listeners (ms), and at most (ms). */
const QUIET_MS = 50;
const SETTLE_MAX_MS = 1_000;

/** A link name: what the admin API accepts in `/links/<name>`. */
const LINK_NAME = /^[\w.-]{1,64}$/;

/**
 * One REST bridge: `url` speaks the Upstash protocol, `adminUrl` takes fault controls. Links (see
 * {@link Bridge.addLink}) are further listeners in front of the same node, one per client, so a fault
 * can hit one (client, node) pair: a partial partition.
 */
export class Bridge {
  readonly token: string;
  readonly backend: Backend;
  counters: Counters = emptyCounters();
  /** Hook for process controls, set by the cluster. */
  onAdmin?: (action: string) => Promise<unknown>;
  /** Called after every node-wide fault change (the cluster mirrors latency and hang onto its TCP proxy). */
  onFaults?: (faults: Faults) => void;

  #keyLocking = new KeyLockingShim();
  #gate = new FaultGate();
  #links = new Map<string, Link>();
  #streams = new Set<Stream>();
  #data: Server;
  #admin: Server;
  #dataPort = 0;
  #adminPort = 0;

  constructor(options: BridgeOptions) {
    this.token = options.token;
    this.backend = options.backend;
    this.#data = createServer((req, res) => void this.#serveData(req, res, undefined));
    this.#admin = createServer((req, res) => void this.#serveAdmin(req, res));
  }

  get url(): string {
    return `http://127.0.0.1:${this.#dataPort}`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.#adminPort}`;
  }

  /** The node-wide faults (every request, whichever listener it came through). */
  get faults(): Faults {
    return this.#gate.faults;
  }

  async start(): Promise<void> {
    await this.ready();
    this.#dataPort = await listen(this.#data);
    this.#adminPort = await listen(this.#admin);
  }

  /** Resolves once the backend can run commands (after start or a restart). */
  ready(timeoutMs = 5_000): Promise<void> {
    return this.backend.ready(timeoutMs);
  }

  async stop(): Promise<void> {
    const servers = [this.#data, this.#admin, ...[...this.#links.values()].map((link) => link.server)];
    for (const gate of [this.#gate, ...[...this.#links.values()].map((link) => link.gate)]) gate.releaseHeld();
    await this.#settle();
    // Open subscription streams end properly first: a body dropped mid-way makes @upstash/redis print
    // "Stream reading error:" after the user's own teardown.
    await this.#endStreams();
    for (const server of servers) server.closeAllConnections();
    await Promise.all(servers.map(close));
    this.backend.close();
  }

  /**
   * Merges node-wide fault settings; clearing `hang` lets the hung requests go on.
   * @throws {Error} for `refuseScriptPublish` on a backend that runs no Lua (memory nodes), where it could not act.
   */
  setFaults(patch: Partial<Faults>): void {
    if (patch.refuseScriptPublish && !this.backend.rewritesFlaggedScripts)
      throw new Error("refuseScriptPublish needs the redis-server backend: a memory node runs no Lua to refuse it in");
    const faults = this.#gate.set(patch);
    this.#keyLocking.accept = !faults.rejectKeyLocking;
    this.#keyLocking.refuse(faults.refuseScriptPublish ? ["PUBLISH"] : []);
    this.backend.rejectKeyLocking?.(faults.rejectKeyLocking);
    this.onFaults?.(faults);
  }

  /**
   * Opens (once) a listener named `name` in front of this node and resolves with its URL. Requests
   * through it pass the link's faults first, then the node's.
   * @example
   * const url = await bridge.addLink("client-3");
   * bridge.setLinkFaults("client-3", { cut: true }); // client 3 loses this node; the others still reach it
   */
  async addLink(name: string): Promise<string> {
    if (!LINK_NAME.test(name)) throw new Error(`a link name is 1-64 letters, digits, '_', '.', '-'`);
    let link = this.#links.get(name);
    if (!link) {
      const created: Link = {
        server: createServer((req, res) => void this.#serveData(req, res, created)),
        port: 0,
        gate: new FaultGate(),
      };
      this.#links.set(name, created);
      created.port = await listen(created.server);
      link = created;
    }
    return linkUrl(link);
  }

  /**
   * Merges the faults of one link (see {@link Bridge.addLink}); `rejectKeyLocking` and `refuseScriptPublish` are
   * node-wide only.
   */
  setLinkFaults(name: string, patch: Partial<Faults>): void {
    const link = this.#links.get(name);
    if (!link) throw new Error(`no such link: ${name}`);
    link.gate.set(patch);
  }

  resetCounters(): void {
    const { waiting, inFlight, streams } = this.counters;
    this.counters = { ...emptyCounters(), waiting, inFlight, streams };
  }

  /**
   * Ends open subscription streams now, after their headers (and maybe messages) were sent: the client's
   * stream ends mid-way, and messages published from then on reach it no more.
   * @returns how many streams it ended
   * @example
   * bridge.cutStreams(); // every waiter subscribed through this node loses its stream
   * bridge.cutStreams({ link: "client-3", graceful: true }); // client 3's streams end cleanly
   */
  cutStreams(options: CutStreams = {}): number {
    const link = options.link === undefined ? undefined : this.#links.get(options.link);
    if (options.link !== undefined && !link) throw new Error(`no such link: ${options.link}`);
    const cut = [...this.#streams].filter((stream) => link === undefined || stream.link === link);
    for (const stream of cut) {
      this.#forget(stream);
      if (options.graceful) stream.res.end();
      else stream.res.destroy();
    }
    return cut.length;
  }

  state(): { faults: Faults; counters: Counters; links: Record<string, LinkState> } {
    const links = Object.fromEntries(
      [...this.#links].map(([name, link]) => [name, { url: linkUrl(link), faults: link.gate.faults }]),
    );
    return { faults: this.#gate.faults, counters: this.counters, links };
  }

  async #serveData(req: IncomingMessage, res: ServerResponse, link: Link | undefined): Promise<void> {
    this.counters.inFlight++;
    try {
      await this.#answer(req, res, link);
    } finally {
      this.counters.inFlight--;
    }
  }

  async #answer(req: IncomingMessage, res: ServerResponse, link: Link | undefined): Promise<void> {
    if (!isLoopback(req)) return send(res, 403, { error: "loopback only" });
    this.counters.received++;
    const { body, tooLarge, gone: left } = await readBody(req, MAX_REQUEST_BYTES);
    if (left) {
      this.counters.abandoned++;
      return;
    }
    if (req.method !== "POST") return send(res, 405, { error: "use POST" });
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return send(res, 401, { error: "WRONGPASS invalid or missing auth token" });

    // The link's faults first (the client's own route), then the node's.
    const gates = link ? [link.gate, this.#gate] : [this.#gate];
    const gone = clientGone(res);
    if (!(await this.#pass(gates, gone.signal))) {
      this.counters.abandoned++;
      return;
    }
    for (const { faults } of gates) {
      if (faults.status !== null) return send(res, faults.status, { error: `injected HTTP ${faults.status}` });
      if (faults.garbage !== null) {
        const garbage = GARBAGE_BODIES[faults.garbage];
        res.writeHead(200, { "content-type": garbage.type });
        return void res.end(garbage.body);
      }
    }
    if (tooLarge) return send(res, 400, { error: REQUEST_TOO_LARGE });

    const base64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    const path = (req.url ?? "/").split("?")[0].replace(/\/+$/, "") || "/";
    if (path === "/subscribe" || path.startsWith("/subscribe/")) return this.#subscribe(res, path, link, gone.signal);
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
      if (error instanceof BadCommand || error instanceof LimitError) return send(res, 400, { error: error.message });
      if (isConnectionError(error)) return send(res, 503, { error: UNAVAILABLE });
      this.counters.answered++;
      send(res, 400, { error: this.#errorText(error) });
    }
  }

  /**
   * `POST /subscribe/<channel>[/<channel>…]` (each name percent-decoded), as Upstash REST serves it: an SSE
   * stream (`text/event-stream`) that confirms each channel with `data: subscribe,<channel>,<count>` (the
   * stream's running count of channels), then sends `data: message,<channel>,<payload>` per message, each
   * event ended by a blank line. The events are never base64-encoded, whatever `Upstash-Encoding` says:
   * @upstash/redis decodes JSON replies only, not stream events. The stream lasts until the client leaves,
   * the backend loses the subscription, or {@link Bridge.cutStreams}.
   */
  async #subscribe(res: ServerResponse, path: string, link: Link | undefined, gone: AbortSignal): Promise<void> {
    this.#count(["subscribe"]);
    let channels: string[];
    try {
      channels = subscribedChannels(path);
    } catch (error) {
      return send(res, 400, { error: errorText(error) });
    }
    const stream: Stream = { res, link, open: false, early: [] };
    let subscription: Subscription;
    try {
      subscription = await this.backend.subscribe([...new Set(channels)], {
        message: (channel, message) => this.#deliver(stream, channel, message),
        // The node lost the subscription (killed, restarted): the body ends properly, as a server's close does.
        lost: () => {
          this.#forget(stream);
          res.end();
        },
      });
    } catch (error) {
      if (isConnectionError(error)) return send(res, 503, { error: UNAVAILABLE });
      this.counters.answered++;
      return send(res, 400, { error: this.#errorText(error) });
    }
    if (gone.aborted || res.destroyed) {
      subscription.close();
      this.counters.abandoned++;
      return;
    }
    this.counters.answered++;
    this.counters.streams++;
    this.#streams.add(stream);
    res.once("close", () => {
      subscription.close();
      this.#forget(stream);
    });
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const seen = new Set<string>();
    res.write(channels.map((channel) => event(`subscribe,${channel},${seen.add(channel).size}`)).join(""));
    stream.open = true;
    for (const [channel, message] of stream.early.splice(0)) this.#deliver(stream, channel, message);
  }

  /** One message for one stream, through the stream's faults: its link's, then the node's. */
  #deliver(stream: Stream, channel: string, message: Buffer): void {
    if (!stream.open) return void stream.early.push([channel, message]);
    const gates = stream.link ? [stream.link.gate, this.#gate] : [this.#gate];
    if (gates.some((gate) => gate.faults.cut) || gates.some((gate) => gate.dropsMessage())) {
      this.counters.droppedMessages++;
      return;
    }
    const text = event(`message,${channel},${message.toString("utf8")}`);
    const write = () => {
      if (!this.#streams.has(stream)) return;
      stream.res.write(text);
      this.counters.messages++;
    };
    const delay = gates.reduce((sum, gate) => sum + gate.faults.messageDelayMs, 0);
    if (delay > 0) setTimeout(write, delay);
    else write();
  }

  /**
   * Waits until no request has been running for {@link QUIET_MS} (at most {@link SETTLE_MAX_MS}): a lock's
   * follow-up requests (a release sent when a late acquire reply lands, its `pending` work) reach a node
   * that is still there, instead of a closed port, when a test stops the nodes right after `release()`.
   * A node that holds its requests (cut, hang) answers nothing anyway: no wait.
   */
  async #settle(): Promise<void> {
    const gates = [this.#gate, ...[...this.#links.values()].map((link) => link.gate)];
    if (gates.some((gate) => gate.faults.cut || gate.faults.hang)) return;
    const deadline = Date.now() + SETTLE_MAX_MS;
    let seen = this.counters.received;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const { received, inFlight } = this.counters;
      if (received !== seen || inFlight > 0) {
        seen = received;
        quietSince = Date.now();
      } else if (Date.now() - quietSince >= QUIET_MS) return;
    }
  }

  /** Ends every open stream's body properly and waits (briefly) until each is flushed. */
  async #endStreams(): Promise<void> {
    const open = [...this.#streams];
    await Promise.all(
      open.map(
        (stream) =>
          new Promise<void>((resolve) => {
            this.#forget(stream);
            const done = setTimeout(resolve, 200);
            stream.res.once("close", () => {
              clearTimeout(done);
              resolve();
            });
            stream.res.end();
          }),
      ),
    );
  }

  /** Takes a stream out of the open ones (once); true when it was open. */
  #forget(stream: Stream): boolean {
    if (!this.#streams.delete(stream)) return false;
    this.counters.streams--;
    return true;
  }

  /** Passes every gate in order; false when a cut dropped the request or the client left meanwhile. */
  async #pass(gates: FaultGate[], gone: AbortSignal): Promise<boolean> {
    if (gates.every((gate) => gate.open)) return true;
    this.counters.waiting++;
    try {
      for (const gate of gates) if (!(await gate.pass(gone))) return false;
      return true;
    } finally {
      this.counters.waiting--;
    }
  }

  async #run(path: string, body: unknown, base64: boolean): Promise<unknown> {
    if (path === "/") {
      const command = toCommand(body);
      this.#count(command);
      const tooLong = keySizeError(command);
      if (tooLong) throw new LimitError(tooLong);
      return { result: this.#encode(command, await this.backend.call(this.#toBackend(command)), base64) };
    }
    if (path === "/pipeline") {
      const commands = toCommands(body);
      this.counters.pipelines++;
      return this.#pipeline(commands, base64);
    }
    if (path === "/multi-exec") {
      const commands = toCommands(body);
      for (const command of commands) this.#count(command);
      const tooLong = commands.map(keySizeError).find((error) => error !== undefined);
      if (tooLong) throw new LimitError(tooLong); // the whole transaction is discarded
      const replies = await this.backend.transaction(commands.map((command) => this.#toBackend(command)));
      if (replies === null) throw new Error("EXECABORT Transaction discarded");
      return replies.map(([error, reply], i) =>
        error ? { error: this.#errorText(error) } : { result: this.#encode(commands[i], reply, base64) },
      );
    }
    throw new NotFound(`no such endpoint: ${path}`);
  }

  /**
   * Runs a pipeline's members one by one on the shared connection, each sent once the one before has
   * answered: as on Upstash, the pipeline is not atomic, and other clients' commands can run between
   * two members (a `pipelineGapMs` fault widens that gap so a test can aim at it). A member's error
   * is its own; a lost connection fails the request.
   */
  async #pipeline(commands: string[][], base64: boolean): Promise<unknown[]> {
    const replies: unknown[] = [];
    for (const [i, command] of commands.entries()) {
      if (i > 0 && this.#gate.faults.pipelineGapMs > 0)
        await new Promise((r) => setTimeout(r, this.#gate.faults.pipelineGapMs));
      this.#count(command);
      const tooLong = keySizeError(command);
      if (tooLong) {
        replies.push({ error: tooLong });
        continue;
      }
      try {
        replies.push({ result: this.#encode(command, await this.backend.call(this.#toBackend(command)), base64) });
      } catch (error) {
        if (isConnectionError(error)) throw error;
        replies.push({ error: this.#errorText(error) });
      }
    }
    return replies;
  }

  /** A reply as JSON; SCRIPT LOAD of a flagged script answers the SHA the client computed. */
  #encode(command: string[], reply: unknown, base64: boolean): unknown {
    const sha = this.#keyLocking.loadedSha(command);
    return encodeReply(sha === undefined ? reply : Buffer.from(sha), base64);
  }

  #errorText(error: unknown): string {
    return this.#keyLocking.clientText(errorText(error));
  }

  /** The command as the backend runs it (a flagged script rewritten for plain Redis, see dev/script-flags.ts). */
  #toBackend(command: string[]): string[] {
    return this.backend.rewritesFlaggedScripts ? this.#keyLocking.rewrite(command) : command;
  }

  #count(command: string[]): void {
    const name = command[0].toLowerCase();
    this.counters.commands[name] = (this.counters.commands[name] ?? 0) + 1;
    if (this.#keyLocking.carriesFlag(command)) this.counters.flaggedScripts++;
  }

  async #serveAdmin(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isLoopback(req)) return send(res, 403, { error: "loopback only" });
    const { body, gone } = await readBody(req, MAX_REQUEST_BYTES);
    if (gone) return;
    const path = (req.url ?? "/").split("?")[0];
    try {
      if (req.method === "GET" && path === "/state") return send(res, 200, await this.#fullState());
      if (req.method !== "POST") return send(res, 405, { error: "use POST (or GET /state)" });
      const linkFaults = /^\/links\/([^/]+)\/faults$/.exec(path);
      const linkStreams = /^\/links\/([^/]+)\/streams\/cut$/.exec(path);
      if (path === "/faults") this.setFaults(parseFaults(body));
      else if (linkFaults) this.setLinkFaults(decodeURIComponent(linkFaults[1]), parseFaults(body));
      else if (path === "/streams/cut") this.cutStreams({ graceful: parseGraceful(body) });
      else if (linkStreams)
        this.cutStreams({ link: decodeURIComponent(linkStreams[1]), graceful: parseGraceful(body) });
      else if (path === "/links")
        await this.addLink(String((JSON.parse(body || "{}") as { name?: unknown }).name ?? ""));
      else if (path === "/reset") {
        this.setFaults({ ...NO_FAULTS });
        for (const name of this.#links.keys()) this.setLinkFaults(name, { ...NO_FAULTS });
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

/** A request over one of Upstash's size limits: answered 400 with Upstash's text. */
class LimitError extends Error {}

function emptyCounters(): Counters {
  return {
    received: 0,
    answered: 0,
    abandoned: 0,
    waiting: 0,
    inFlight: 0,
    commands: {},
    flaggedScripts: 0,
    pipelines: 0,
    streams: 0,
    messages: 0,
    droppedMessages: 0,
  };
}

/** The channels of a `/subscribe/…` path, percent-decoded; at least one, none empty. */
function subscribedChannels(path: string): string[] {
  const segments = path.split("/").slice(2);
  if (segments.length === 0 || segments.includes("")) {
    throw new BadCommand("ERR wrong number of arguments for 'subscribe' command");
  }
  try {
    return segments.map((segment) => decodeURIComponent(segment));
  } catch {
    throw new BadCommand("ERR a channel name in the path is not valid percent-encoding");
  }
}

/**
 * One SSE event: each line of `data` its own `data:` field, a blank line after. A payload with a newline stays
 * one event for an SSE reader, but not for @upstash/redis, which takes every `data:` line as an event of its own.
 */
function event(data: string): string {
  return `${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join("")}\n`;
}

/** The `graceful` flag of a `/streams/cut` request. */
function parseGraceful(body: string): boolean {
  return Boolean((JSON.parse(body || "{}") as { graceful?: unknown }).graceful);
}

/**
 * The answer while the backend cannot be reached (its redis-server killed, paused past the client's patience,
 * or gone): what happened and what brings it back, never the Redis client's own words about its options.
 */
export const UNAVAILABLE =
  "redis unavailable: the server behind this local node is down (faults.restart() starts it again, empty)";

/** Anything but a reply of the backend itself (a ReplyError) means it could not be reached. */
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

/**
 * Reads the body; past `limit` bytes it reads on (so the client can still read the answer) but keeps nothing.
 * A client that goes away mid-body (its request cut by its own timeout) is `gone`: never a rejection, which
 * nobody would catch (the servers call the handlers with `void`).
 */
function readBody(req: IncomingMessage, limit: number): Promise<{ body: string; tooLarge: boolean; gone?: true }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= limit) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on("end", () =>
      resolve(
        bytes > limit
          ? { body: "", tooLarge: true }
          : { body: Buffer.concat(chunks).toString("utf8"), tooLarge: false },
      ),
    );
    req.on("error", () => resolve({ body: "", tooLarge: false, gone: true }));
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(toJson(body));
}

function linkUrl(link: Link): string {
  return `http://127.0.0.1:${link.port}`;
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
