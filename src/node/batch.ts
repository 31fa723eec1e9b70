// Per-node batching: the requests to one node that start in the same turn go out as one pipeline request.
import { type AbortWatcher, unwatchAbort, watchAbort } from "../support/abort.ts";

/** One command's outcome inside a pipeline reply. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * How a batcher reaches its node. `one` sends a command on its own (a plain request); `many` sends
 * several as one pipeline request and resolves with one outcome per command, in order. Both stop when
 * `signal` aborts.
 * @example
 * ```ts
 * const transport: Transport<string[]> = { one: (c, s) => post("/", c, s), many: (cs, s) => post("/pipeline", cs, s) };
 * ```
 */
export interface Transport<C> {
  one(command: C, signal: AbortSignal): Promise<unknown>;
  many(commands: C[], signal: AbortSignal): Promise<Outcome[]>;
}

/** Sends one command through a batcher: resolves with its reply, rejects with its error or {@link Abandoned}. */
export type Send<C> = (command: C, signal: AbortSignal) => Promise<unknown>;

/**
 * Why a command that stopped waiting rejected, while its request still runs (it shares a pipeline request
 * with commands that still wait, or its client cannot be cancelled): `landed` resolves once that request
 * is over, so whoever cleans up after the command knows when it can no longer land.
 * @example
 * ```ts
 * catch (error) { if (error instanceof Abandoned) await error.landed; }
 * ```
 */
export class Abandoned extends Error {
  readonly reason: unknown;
  readonly landed: Promise<void>;
  constructor(reason: unknown, landed: Promise<void>) {
    super("stopped waiting; the request still runs");
    this.name = "Abandoned";
    this.reason = reason;
    this.landed = landed;
  }
}

/** At most this many commands in one pipeline request (a semaphore's command carries every slot key). */
export const MAX_BATCH = 64;

/** A batch goes out after this many microtask hops in a row brought no new request... */
const QUIET_HOPS = 2;
/** ...and at the latest after this many hops. Microtasks only: never a timer, so never across requests. */
const MAX_HOPS = 32;

interface Member<C> {
  command: C;
  signal: AbortSignal;
  resolve(value: unknown): void;
  reject(reason: unknown): void;
  /** Stopped waiting (its signal aborted while its pipeline request ran). */
  stopped: boolean;
  /** Its signal is followed as an announced abort (support/abort.ts), not by a listener. */
  watched: boolean;
}

/**
 * Collects the commands sent in one turn of the event loop (they arrive within a few microtask hops of
 * each other, before the microtask queue drains) and sends them as one pipeline request. A lone command
 * goes out as a plain request, with no wait beyond those hops. Each command keeps its own reply and its
 * own abort: a member whose signal aborts stops waiting at once, and the pipeline request is cut when
 * every member has stopped waiting. Since a batch never outlives the microtasks of the turn that opened
 * it, a Worker never sees one request's I/O settle another request's promise.
 * @example
 * ```ts
 * const send = batching(transport);
 * const [a, b] = await Promise.all([send(cmdA, signalA), send(cmdB, signalB)]); // one HTTP request
 * ```
 */
export function batching<C>(transport: Transport<C>): Send<C> {
  let open: Member<C>[] | undefined;
  return (command, signal) =>
    new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const member: Member<C> = { command, signal, resolve, reject, stopped: false, watched: false };
      if (open) return void open.push(member);
      const batch = [member];
      open = batch;
      void endOfTurn(batch).then(() => {
        open = undefined;
        flush(transport, batch);
      });
    });
}

/** Resolves once the batch stopped growing for {@link QUIET_HOPS} microtask hops. */
async function endOfTurn(batch: unknown[]): Promise<void> {
  let seen = batch.length;
  let quiet = 0;
  for (let hop = 0; hop < MAX_HOPS && quiet < QUIET_HOPS; hop++) {
    await undefined;
    quiet = batch.length === seen ? quiet + 1 : 0;
    seen = batch.length;
  }
}

function flush<C>(transport: Transport<C>, batch: Member<C>[]): void {
  const live = batch.filter((member) => {
    if (member.signal.aborted) member.reject(member.signal.reason);
    return !member.signal.aborted;
  });
  for (let i = 0; i < live.length; i += MAX_BATCH) send(transport, live.slice(i, i + MAX_BATCH));
}

function send<C>(transport: Transport<C>, live: Member<C>[]): void {
  if (live.length === 1) {
    const [member] = live;
    transport.one(member.command, member.signal).then(member.resolve, member.reject);
    return;
  }
  const request = new PipelineRequest(live);
  const commands: C[] = new Array(live.length);
  for (let i = 0; i < live.length; i++) {
    commands[i] = live[i].command;
    // The lock's own requests announce their abort (no listener each); any other signal gets one listener
    // object for the whole batch (not a closure per member): either way `stop` finds who stopped.
    live[i].watched = watchAbort(live[i].signal, request);
    if (!live[i].watched) live[i].signal.addEventListener("abort", request, { once: true });
  }
  transport.many(commands, request.controller.signal).then(
    (outcomes) => request.replied(outcomes),
    (error: unknown) => request.failed(error),
  );
}

/**
 * One pipeline request in flight and its members: each member stops waiting on its own signal, the
 * request is cut once none waits, and every member gets its own outcome.
 */
class PipelineRequest<C> implements AbortWatcher {
  readonly controller = new AbortController();
  readonly #members: Member<C>[];
  #waiting: number;
  /** Resolves once the request is over (replied, failed or cut): what an abandoned member waits for. */
  #over: Promise<void> | undefined;
  #end: (() => void) | undefined;
  #ended = false;

  constructor(members: Member<C>[]) {
    this.#members = members;
    this.#waiting = members.length;
  }

  /** A member's signal aborted (announced): see {@link PipelineRequest.stop}. */
  aborted(signal: AbortSignal): void {
    this.stop(signal);
  }

  /** A member's signal aborted (its abort event). */
  handleEvent(event: Event): void {
    this.stop(event.target as AbortSignal);
  }

  /** The members whose signal this is stop waiting; the last one to stop cuts the request. */
  stop(signal: AbortSignal): void {
    for (const member of this.#members) {
      if (member.signal !== signal || member.stopped) continue;
      member.stopped = true;
      if (--this.#waiting === 0) {
        this.controller.abort(new DOMException("every request of the batch stopped waiting", "AbortError"));
        member.reject(member.signal.reason);
      } else member.reject(new Abandoned(member.signal.reason, this.#landed())); // its command still runs with the others
    }
  }

  replied(outcomes: Outcome[]): void {
    this.#finish();
    const members = this.#members;
    const whole = Array.isArray(outcomes) && outcomes.length === members.length;
    for (let i = 0; i < members.length; i++) {
      const outcome = whole ? outcomes[i] : undefined;
      if (outcome?.ok === true) members[i].resolve(outcome.value);
      else members[i].reject(new Error(outcome?.ok === false ? outcome.error : "unexpected pipeline reply"));
    }
  }

  failed(error: unknown): void {
    this.#finish();
    for (const member of this.#members) member.reject(error);
  }

  /** The request is over: nothing listens any more, and abandoned members learn it. */
  #finish(): void {
    this.#ended = true;
    this.#end?.();
    for (const member of this.#members) {
      if (member.watched) unwatchAbort(member.signal, this);
      else member.signal.removeEventListener("abort", this);
    }
  }

  #landed(): Promise<void> {
    this.#over ??= this.#ended ? Promise.resolve() : new Promise<void>((resolve) => (this.#end = resolve));
    return this.#over;
  }
}
