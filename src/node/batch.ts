// Per-node batching: the requests to one node that start in the same turn go out as one pipeline request.
import { unwatchAbort, watchAbort } from "../support/abort.ts";

/** One command's outcome inside a pipeline reply. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * How a batcher reaches its node. `one` sends a command on its own (a plain request); `many` sends
 * several as one pipeline request and resolves with one outcome per command, in order. Both stop when
 * `signal` aborts.
 */
export interface Transport<C> {
  one(command: C, signal: AbortSignal): Promise<unknown>;
  many(commands: C[], signal: AbortSignal): Promise<Outcome[]>;
}

/**
 * Sends one command through a batcher: resolves with its reply, rejects with its error or {@link Abandoned}. A
 * `rider` goes in the batch's first request and never counts toward {@link MAX_BATCH}: it adds a command, never a
 * request (a lone rider, whose batch holds nothing else, goes out alone).
 */
export type Send<C> = (command: C, signal: AbortSignal, rider?: boolean) => Promise<unknown>;

/**
 * Why a command that stopped waiting rejected, while its request still runs (it shares a pipeline request
 * with commands that still wait, or its client cannot be cancelled): `landed` resolves once that request
 * is over, so whoever cleans up after the command knows when it can no longer land.
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
  /** Rides in the first request of its batch (see {@link Send}). */
  rider: boolean;
}

/**
 * Collects the commands sent in one turn of the event loop (they arrive within a few microtask hops of
 * each other, before the microtask queue drains) and sends them as one pipeline request. A lone command
 * goes out as a plain request, with no wait beyond those hops. Each command keeps its own reply and its
 * own abort: a member whose signal aborts stops waiting at once, and the pipeline request is cut when
 * every member has stopped waiting. Since a batch never outlives the microtasks of the turn that opened
 * it, a Worker never sees one request's I/O settle another request's promise.
 */
export function batching<C>(transport: Transport<C>): Send<C> {
  let open: Member<C>[] | undefined;
  return (command, signal, rider = false) =>
    new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const member: Member<C> = { command, signal, resolve, reject, stopped: false, watched: false, rider };
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
  const riders = live.filter((member) => member.rider);
  const rest = riders.length === 0 ? live : live.filter((member) => !member.rider);
  if (rest.length === 0) {
    if (riders.length > 0) send(transport, riders);
    return;
  }
  for (let i = 0; i < rest.length; i += MAX_BATCH) {
    const members = rest.slice(i, i + MAX_BATCH);
    send(transport, i === 0 && riders.length > 0 ? [...riders, ...members] : members);
  }
}

function send<C>(transport: Transport<C>, live: Member<C>[]): void {
  if (live.length === 1) {
    const [member] = live;
    transport.one(member.command, member.signal).then(member.resolve, member.reject);
    return;
  }
  const request = new AbortController();
  let waiting = live.length;
  let ended = false;
  let end: (() => void) | undefined;
  /** Resolves once the request is over (replied, failed or cut): what an abandoned member waits for. */
  let over: Promise<void> | undefined;
  const landed = () => (over ??= ended ? Promise.resolve() : new Promise<void>((resolve) => (end = resolve)));
  /** The members whose signal this is stop waiting; the last one to stop cuts the request. */
  const stop = (signal: AbortSignal) => {
    for (const member of live) {
      if (member.signal !== signal || member.stopped) continue;
      member.stopped = true;
      if (--waiting === 0) {
        request.abort(new DOMException("every request of the batch stopped waiting", "AbortError"));
        member.reject(member.signal.reason);
      } else member.reject(new Abandoned(member.signal.reason, landed())); // its command still runs with the others
    }
  };
  // The lock's own requests announce their abort (no listener each); any other signal gets this one
  // listener object for the whole batch (not a closure per member).
  const watcher = { aborted: stop, handleEvent: (event: Event) => stop(event.target as AbortSignal) };
  /** The request is over: nothing follows the members' signals any more, and abandoned members learn it. */
  const finish = () => {
    ended = true;
    end?.();
    for (const member of live) {
      if (member.watched) unwatchAbort(member.signal, watcher);
      else member.signal.removeEventListener("abort", watcher);
    }
  };
  const commands: C[] = new Array(live.length);
  for (let i = 0; i < live.length; i++) {
    const member = live[i];
    commands[i] = member.command;
    member.watched = watchAbort(member.signal, watcher);
    if (!member.watched) member.signal.addEventListener("abort", watcher, { once: true });
  }
  transport.many(commands, request.signal).then(
    (outcomes) => {
      finish();
      const whole = Array.isArray(outcomes) && outcomes.length === live.length;
      for (let i = 0; i < live.length; i++) {
        const outcome = whole ? outcomes[i] : undefined;
        if (outcome?.ok === true) live[i].resolve(outcome.value);
        else live[i].reject(new Error(outcome?.ok === false ? outcome.error : "unexpected pipeline reply"));
      }
    },
    (error: unknown) => {
      finish();
      for (const member of live) member.reject(error);
    },
  );
}
