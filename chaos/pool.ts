// The chaos clients: worker threads that can be started, told things, crashed mid-section and started again.
import { Worker } from "node:worker_threads";
import type { ClientData, ClientMessage } from "./client.ts";
import { sharedNow, type ChaosRecord, type CrashRecord, type EnterRecord } from "./records.ts";

/** Everything a client needs but its index and incarnation. */
export type ClientSetup = (client: number) => Omit<ClientData, "client" | "incarnation">;

type Listener = (record: ChaosRecord) => void;

/**
 * Runs `count` clients. Every record a client reports goes to `write` (the log) and to the listeners;
 * the pool also knows which section each client is in right now.
 * @example
 * const pool = new ClientPool(16, setup, write);
 * pool.start();
 * await pool.crash(3, "nemesis");
 */
export class ClientPool {
  readonly count: number;
  /** Critical sections completed so far. */
  cycles = 0;
  #setup: ClientSetup;
  #write: (record: ChaosRecord) => void;
  #workers: (Worker | undefined)[] = [];
  #incarnations: number[] = [];
  #open = new Map<number, EnterRecord>();
  #listeners = new Set<Listener>();
  #stopping = false;
  /** Clients held back (told `pause: true` and not let go since). */
  #paused = new Set<number>();

  constructor(count: number, setup: ClientSetup, write: (record: ChaosRecord) => void) {
    this.count = count;
    this.#setup = setup;
    this.#write = write;
  }

  start(): void {
    for (let client = 0; client < this.count; client++) this.#spawn(client);
  }

  /** The resource a client contends for. */
  resourceOf(client: number): string {
    return this.#setup(client).resource;
  }

  /** Whether the client's worker is running (not crashed and not yet started again). */
  alive(client: number): boolean {
    return this.#workers[client] !== undefined;
  }

  /** The section `client` has entered and not yet reported finished, if any. */
  openSection(client: number): EnterRecord | undefined {
    return this.#open.get(client);
  }

  send(client: number, message: ClientMessage): void {
    const worker = this.#workers[client];
    if (!worker) return;
    if (message.pause !== undefined && this.#paused.has(client) !== message.pause) {
      if (message.pause) this.#paused.add(client);
      else this.#paused.delete(client);
      this.#write({ type: "client-state", client, at: sharedNow(), state: message.pause ? "paused" : "running" });
    }
    worker.postMessage(message);
  }

  broadcast(message: ClientMessage, filter: (client: number) => boolean = () => true): void {
    for (let client = 0; client < this.count; client++) if (filter(client)) this.send(client, message);
  }

  /** Calls `listener` with every record a client reports until the returned function is called. */
  listen(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the first record matching `match` (reported from now on), or undefined after `timeoutMs`. */
  next<T extends ChaosRecord>(match: (record: ChaosRecord) => record is T, timeoutMs: number): Promise<T | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        off();
        resolve(undefined);
      }, timeoutMs);
      const off = this.listen((record) => {
        if (!match(record)) return;
        clearTimeout(timer);
        off();
        resolve(record);
      });
    });
  }

  /**
   * Terminates a client's worker thread at once (a process crash: no release, no last words). The crash
   * record's time is taken before the termination begins, so a section it cuts short ends no later.
   */
  async crash(client: number, reason: CrashRecord["reason"]): Promise<CrashRecord> {
    const worker = this.#workers[client];
    this.#workers[client] = undefined;
    const record: CrashRecord = { type: "crash", client, at: sharedNow(), reason };
    this.#write(record);
    this.#open.delete(client);
    await worker?.terminate();
    return record;
  }

  /** Starts a crashed client again: a new incarnation with the same links and resource. */
  restart(client: number): void {
    if (this.#workers[client] || this.#stopping) return;
    this.#spawn(client);
  }

  /**
   * Asks every client to stop after its current cycle; terminates (and logs as crashed) those still running after
   * `graceMs`.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    this.broadcast({ stop: true });
    const exits = this.#workers.map((w) => (w ? new Promise((r) => w.once("exit", r)) : Promise.resolve()));
    await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, graceMs))]);
    await Promise.all(
      this.#workers.map((w, client) =>
        w && this.#open.has(client) ? this.crash(client, "wind-down") : w?.terminate(),
      ),
    );
  }

  #spawn(client: number): void {
    const incarnation = (this.#incarnations[client] ?? -1) + 1;
    this.#incarnations[client] = incarnation;
    const data: ClientData = { client, incarnation, ...this.#setup(client) };
    const worker = new Worker(new URL("./client.ts", import.meta.url), { workerData: data });
    this.#workers[client] = worker;
    // A new worker starts free to contend, whatever its crashed predecessor was told.
    this.#paused.delete(client);
    this.#write({ type: "client-state", client, at: sharedNow(), state: "running" });
    worker.on("message", (record: ChaosRecord) => {
      // A crashed worker's last messages may still arrive (termination is not instant): they are logged,
      // as they happened, but nobody acts on them any more.
      this.#write(record);
      if (record.type === "cs") this.cycles++;
      if (this.#workers[client] !== worker) return;
      if (record.type === "enter") this.#open.set(client, record);
      if (record.type === "cs") this.#open.delete(client);
      for (const listener of this.#listeners) listener(record);
    });
    worker.on("error", (error) => process.stderr.write(`client ${client} failed: ${error.message}\n`));
  }
}
