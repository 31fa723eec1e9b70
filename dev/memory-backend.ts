// The bridge's backend on an in-process memory node (src/memory/memory-node.ts): no redis-server, no
// Redis client. It answers exactly what the library, its doctor and the demo send — the library's scripts
// by EVAL and EVALSHA, SCRIPT LOAD/EXISTS/FLUSH, PUBLISH and subscriptions, and a few plain commands on
// strings and lists — and refuses anything else by name, never with a silent wrong answer.
import { createHash } from "node:crypto";
import { EXISTS_SCRIPT } from "../src/doctor/probes.ts";
import { PUBLISH_FROM_SCRIPT } from "../src/scripts/publish-probe.ts";
import * as library from "../src/scripts/index.ts";
import { KEY_LOCKING, withoutKeyLocking, type Script } from "../src/scripts/index.ts";
import { MemoryNode } from "../src/memory/memory-node.ts";
import { type Backend, ReplyError, type Subscription, type SubscriptionHandlers } from "./backend.ts";

/** What the refusals say: what this mode is, and what to run instead. */
const MODE = "edge-redlock's memory mode (dev --memory)";
const INSTEAD = "run real local nodes (`edge-redlock dev`, without --memory) for anything else";

/** The doctor's probe: scripting works at all. */
const EXISTS_PROBE = "exists-probe" as const;
/** The doctor's wakeup check: a script publishes, as the line's scripts do. */
const PUBLISH_PROBE = "publish-probe" as const;

/** A script this backend runs: its name, and whether the text sent carries Upstash's key-locking flag. */
interface KnownScript {
  name: string;
  flagged: boolean;
}

/** Options of {@link MemoryBackend}: for the project's tests, which give the node scripts of their own. */
export interface MemoryBackendOptions {
  /** The node the scripts run on (default: a new `MemoryNode`); a subclass may run more scripts. */
  node?: MemoryNode;
  /** Scripts besides the library's that `node` runs by name (`MemoryNode.execute`), e.g. one that publishes. */
  scripts?: { name: string; lua: string }[];
}

/** SHA-1 of a script, as Redis names it for EVALSHA. */
function sha1(text: string): string {
  return createHash("sha1").update(text, "utf8").digest("hex");
}

let known: Map<string, KnownScript> | undefined;

/** Every script the library may send, by the SHA-1 of each text it sends (with the flag and without). */
function knownScripts(): Map<string, KnownScript> {
  if (known) return known;
  known = new Map();
  const scripts = Object.values(library).filter(
    (value): value is Script => typeof value === "object" && value !== null && "lua" in value && "vote" in value,
  );
  for (const { name, lua } of scripts) {
    known.set(sha1(lua), { name, flagged: lua !== withoutKeyLocking(lua) });
    known.set(sha1(withoutKeyLocking(lua)), { name, flagged: false });
  }
  known.set(sha1(EXISTS_SCRIPT), { name: EXISTS_PROBE, flagged: false });
  known.set(sha1(KEY_LOCKING + EXISTS_SCRIPT), { name: EXISTS_PROBE, flagged: true });
  known.set(sha1(PUBLISH_FROM_SCRIPT), { name: PUBLISH_PROBE, flagged: false });
  known.set(sha1(KEY_LOCKING + PUBLISH_FROM_SCRIPT), { name: PUBLISH_PROBE, flagged: true });
  return known;
}

/**
 * One memory node behind a bridge. The bridge's faults (latency, hang, cut, status, garbage, the
 * `rejectKeyLocking` flag, and those of subscription streams) work as in front of redis-server, and so do
 * the process controls: `kill` (no answer, data gone, until `restart`), `pause`/`resume`, and `restart`, which
 * empties the node and its script cache and ends its subscriptions. PUBLISH, from a client or from a script
 * the node runs (`MemoryNode.publish`), reaches the bridge's SSE streams. Transactions (`/multi-exec`) and
 * any command the library does not send are refused.
 * @example
 * const bridge = new Bridge({ backend: new MemoryBackend("memory-1"), token });
 */
export class MemoryBackend implements Backend {
  readonly rewritesFlaggedScripts = false;
  /** The node the scripts run on. */
  readonly node: MemoryNode;
  /** Lists (RPUSH, LRANGE: the demo's log); strings live in the node. Lists never expire here. */
  readonly #lists = new Map<string, string[]>();
  /** The script cache: SHAs loaded by EVAL or SCRIPT LOAD (gone on SCRIPT FLUSH or a restart). */
  readonly #loaded = new Set<string>();
  /** Scripts besides the library's, by SHA-1 of their text. */
  readonly #extra = new Map<string, KnownScript>();
  #rejectFlag = false;

  constructor(label: string, options: MemoryBackendOptions = {}) {
    this.node = options.node ?? new MemoryNode(label);
    for (const { name, lua } of options.scripts ?? []) {
      this.#extra.set(sha1(lua), { name, flagged: lua !== withoutKeyLocking(lua) });
      this.#extra.set(sha1(withoutKeyLocking(lua)), { name, flagged: false });
    }
  }

  /** As a redis-server process would be: `killed` answers nothing, `paused` holds every command until resumed. */
  state: "running" | "paused" | "killed" = "running";
  /** Commands held by a pause, let go by `resume`, `kill` or `restart`. */
  #paused: (() => void)[] = [];

  async ready(): Promise<void> {}

  close(): void {
    this.#letGo();
  }

  /**
   * Stops answering, its data and subscriptions gone, until `restart`: a crashed redis-server without
   * persistence. The bridge answers its requests as it does for a killed redis-server (HTTP 503).
   */
  kill(): void {
    this.state = "killed";
    this.node.cutSubscriptions();
    this.#empty();
    this.#letGo();
  }

  /** Holds every command until `resume` (a stopped process: SIGSTOP). */
  pause(): void {
    if (this.state !== "running") throw new Error(`cannot pause a ${this.state} memory node`);
    this.state = "paused";
  }

  /** Lets the held commands run (SIGCONT). */
  resume(): void {
    if (this.state !== "paused") throw new Error(`cannot resume a ${this.state} memory node`);
    this.state = "running";
    this.#letGo();
  }

  rejectKeyLocking(reject: boolean): void {
    this.#rejectFlag = reject;
  }

  /**
   * Empties the node and its script cache and ends its subscriptions: a restart that lost its data and its
   * connections, as `redis-server` without persistence.
   */
  restart(): void {
    this.node.cutSubscriptions();
    this.#empty();
    this.state = "running";
    this.#letGo();
  }

  #empty(): void {
    this.node.flush();
    this.#lists.clear();
    this.#loaded.clear();
  }

  #letGo(): void {
    for (const go of this.#paused.splice(0)) go();
  }

  /** Waits out a pause; throws as a lost connection does while the node is killed. */
  async #available(): Promise<void> {
    while (this.state === "paused") await new Promise<void>((resolve) => this.#paused.push(resolve));
    if (this.state === "killed") throw new Error("memory node killed (restart starts it again, empty)");
  }

  async subscribe(channels: string[], handlers: SubscriptionHandlers): Promise<Subscription> {
    await this.#available();
    const controller = new AbortController();
    const close = () => controller.abort();
    const ends: Promise<void>[] = [];
    try {
      for (const channel of channels) {
        const relay = (message: string) => handlers.message(channel, Buffer.from(message, "utf8"));
        ends.push((await this.node.subscribe(channel, relay, controller.signal)).closed);
      }
    } catch (error) {
      close();
      throw error;
    }
    // A subscription the node ended (a restart) ends the stream; one this side closed does not count as lost.
    const lost = () => {
      if (controller.signal.aborted) return;
      close();
      handlers.lost();
    };
    for (const end of ends) void end.then(lost);
    return { close };
  }

  async transaction(): Promise<never> {
    await this.#available();
    throw new ReplyError(`ERR ${MODE} does not run transactions (MULTI/EXEC): ${INSTEAD}`);
  }

  async call(command: string[]): Promise<unknown> {
    await this.#available();
    const [name, ...args] = command;
    const node = this.node;
    switch (name.toUpperCase()) {
      case "EVAL":
      case "EVALSHA": {
        const [script, numkeys, ...rest] = args;
        const byText = name.toUpperCase() === "EVAL";
        const sha = byText ? sha1(script ?? "") : (script ?? "").toLowerCase();
        if (!byText && !this.#loaded.has(sha)) throw new ReplyError("NOSCRIPT No matching script. Please use EVAL.");
        const count = Number(numkeys);
        if (!Number.isInteger(count) || count < 0 || count > rest.length) {
          throw new ReplyError("ERR Number of keys can't be greater than number of args");
        }
        const found = this.#script(sha);
        if (byText) this.#loaded.add(sha);
        return wire(await this.#run(found, rest.slice(0, count), rest.slice(count)));
      }
      case "SCRIPT":
        return this.#scriptCommand(args);
      case "TIME": {
        const now = Date.now();
        return [Buffer.from(String(Math.floor(now / 1000))), Buffer.from(String((now % 1000) * 1000))];
      }
      case "PUBLISH":
        if (args.length !== 2) throw new ReplyError("ERR wrong number of arguments for 'publish' command");
        return String(node.publish(args[0], args[1]));
      case "PING":
        return Buffer.from("PONG");
      case "INFO":
        return Buffer.from("# Memory\r\nmaxmemory_policy:noeviction\r\n");
      case "GET":
        this.#notList(args[0]);
        return wire(node.get(args[0]) ?? null);
      case "MGET":
        return args.map((key) => wire(this.#lists.has(key) ? null : (node.get(key) ?? null)));
      case "SET":
        return this.#set(args);
      case "INCR":
        return this.#incr(args[0]);
      case "RPUSH":
        return this.#rpush(args[0], args.slice(1));
      case "LRANGE":
        return this.#lrange(args[0], Number(args[1]), Number(args[2]));
      case "DEL": {
        let deleted = 0; // one by one: a key named twice counts once, as in Redis
        for (const key of args) {
          if (!this.#exists(key)) continue;
          node.delete(key);
          this.#lists.delete(key);
          deleted++;
        }
        return String(deleted);
      }
      case "EXISTS":
        return String(args.filter((key) => this.#exists(key)).length);
      case "PTTL":
        return String(this.#lists.has(args[0]) ? -1 : node.pttl(args[0]));
      case "FLUSHDB":
      case "FLUSHALL":
        node.flush();
        this.#lists.clear();
        return Buffer.from("OK");
      default:
        throw new ReplyError(
          `ERR ${MODE} does not run '${name.toLowerCase()}': it answers what the library sends; ${INSTEAD}`,
        );
    }
  }

  /** The script behind `sha`, or a refusal that names the mode. */
  #script(sha: string): KnownScript {
    const found = knownScripts().get(sha) ?? this.#extra.get(sha);
    if (!found) {
      throw new ReplyError(
        `ERR ${MODE} runs only edge-redlock's own scripts (sha1 ${sha} is not one of them); ${INSTEAD}`,
      );
    }
    if (found.flagged && this.#rejectFlag)
      throw new ReplyError("ERR Unexpected flag in script shebang: allow-key-locking");
    return found;
  }

  async #run(script: KnownScript, keys: string[], args: string[]): Promise<unknown> {
    const { name } = script;
    if (name === EXISTS_PROBE) return keys.slice(0, 1).filter((key) => this.node.get(key) !== undefined).length;
    if (name === PUBLISH_PROBE) return this.node.publish(args[0], args[1]);
    try {
      // A test's own script names are no library Script's; the node's `execute` dispatches on the text alone.
      // A signal of its own that never aborts (a request that reached the bridge runs to its end): one shared by
      // every request would collect a listener per request in flight, and Node 20 warns past ten.
      return await this.node.run({ name } as Pick<Script, "name">, keys, args, new AbortController().signal);
    } catch (error) {
      throw new ReplyError((error as Error).message);
    }
  }

  #scriptCommand(args: string[]): unknown {
    const sub = (args[0] ?? "").toUpperCase();
    if (sub === "LOAD" && args.length === 2) {
      const sha = sha1(args[1]);
      this.#script(sha);
      this.#loaded.add(sha);
      return Buffer.from(sha);
    }
    if (sub === "EXISTS") return args.slice(1).map((sha) => (this.#loaded.has(sha.toLowerCase()) ? "1" : "0"));
    if (sub === "FLUSH") {
      this.#loaded.clear();
      return Buffer.from("OK");
    }
    throw new ReplyError(`ERR ${MODE} runs SCRIPT LOAD, EXISTS and FLUSH only; ${INSTEAD}`);
  }

  #exists(key: string): boolean {
    return this.#lists.has(key) || this.node.get(key) !== undefined;
  }

  #notList(key: string): void {
    if (this.#lists.has(key)) throw new ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value");
  }

  /** INCR: an integer string plus one, its expiry kept. */
  #incr(key: string): string {
    this.#notList(key);
    const current = this.node.get(key) ?? "0";
    if (!/^-?(0|[1-9][0-9]*)$/.test(current) || !Number.isSafeInteger(Number(current) + 1)) {
      throw new ReplyError("ERR value is not an integer or out of range");
    }
    const pttl = this.node.pttl(key);
    const next = String(Number(current) + 1);
    this.node.set(key, next, pttl > 0 ? pttl : Number.POSITIVE_INFINITY);
    return next;
  }

  #rpush(key: string, values: string[]): string {
    if (values.length === 0) throw new ReplyError("ERR wrong number of arguments for 'rpush' command");
    if (this.node.get(key) !== undefined)
      throw new ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value");
    const list = this.#lists.get(key) ?? [];
    list.push(...values);
    this.#lists.set(key, list);
    return String(list.length);
  }

  /** LRANGE with Redis' indexes: negative from the end, `stop` inclusive, out of range clamped. */
  #lrange(key: string, start: number, stop: number): unknown {
    if (!Number.isInteger(start) || !Number.isInteger(stop))
      throw new ReplyError("ERR value is not an integer or out of range");
    this.#notString(key);
    const list = this.#lists.get(key) ?? [];
    const from = Math.max(0, start < 0 ? list.length + start : start);
    const to = Math.min(list.length - 1, stop < 0 ? list.length + stop : stop);
    return list.slice(from, to + 1).map((value) => Buffer.from(value));
  }

  #notString(key: string): void {
    if (this.node.get(key) !== undefined)
      throw new ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value");
  }

  /** SET key value [PX ms | EX s] [NX | XX]: what the doctor's probes, the demo and tests send. */
  #set(args: string[]): unknown {
    const [key, value, ...options] = args;
    let ttl = Number.POSITIVE_INFINITY;
    let condition: "NX" | "XX" | undefined;
    for (let i = 0; i < options.length; i++) {
      const option = options[i].toUpperCase();
      if (option === "PX" || option === "EX") {
        const amount = Number(options[++i]);
        if (!Number.isInteger(amount) || amount <= 0) throw new ReplyError("ERR invalid expire time in 'set' command");
        ttl = option === "PX" ? amount : amount * 1000;
      } else if (option === "NX" || option === "XX") condition = option;
      else throw new ReplyError(`ERR ${MODE} runs SET with PX, EX, NX or XX only; ${INSTEAD}`);
    }
    if (value === undefined) throw new ReplyError("ERR wrong number of arguments for 'set' command");
    const exists = this.#exists(key);
    if ((condition === "NX" && exists) || (condition === "XX" && !exists)) return null;
    this.#lists.delete(key);
    this.node.set(key, value, ttl);
    return Buffer.from("OK");
  }
}

/** A memory node's reply in the shape of ioredis' buffer API: strings as Buffers, integers as decimal strings. */
function wire(reply: unknown): unknown {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === "number" || typeof reply === "bigint") return String(reply);
  if (typeof reply === "string") return Buffer.from(reply);
  if (Array.isArray(reply)) return reply.map(wire);
  return Buffer.from(String(reply));
}
