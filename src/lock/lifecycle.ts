// The lifecycle of a held lock (or permit): made from a won grant, extended, released; and the undoing
// of a failed attempt. Whatever can still land after the caller thinks it is done is handled here:
// acquire replies still out at release time, and the requests a failed attempt may have set keys with.
import { LockExtensionError, nameNodes, type AttemptTally } from "../errors.ts";
import type { Round } from "../quorum/fan-out.ts";
import type { Grant, Rounds } from "../quorum/rounds.ts";
import { LEAVE, REQUEUE } from "../scripts/fair-mutex.ts";
import { EXTEND, RELEASE } from "../scripts/lock.ts";
import type { Script } from "../scripts/script.ts";
import type { Vote } from "../scripts/vote.ts";
import { checkTtl } from "../check.ts";
import { type Emit, eventEmitter } from "../events/emit.ts";
import { nodeTally } from "../events/tally.ts";
import type { LockKind } from "../events/types.ts";
import { lockState, type Lock, type LockOwner, type LockState, type ReleaseResult } from "./lock.ts";
import type { Requeue } from "./line.ts";
import type { LocalLine } from "./local-line.ts";

/**
 * Release, extension and cleanup for the locks and permits of one `Redlock`.
 */
export class Lifecycle {
  readonly #rounds: Rounds;
  /** This Redlock's waiters, woken directly by its own releases. */
  readonly #turns: LocalLine | undefined;
  /** Reports to the Redlock's `onEvent`; absent without one. */
  readonly emit: Emit | undefined;
  /** What a held lock calls back into. */
  readonly owner: LockOwner;

  constructor(rounds: Rounds, turns?: LocalLine) {
    this.#rounds = rounds;
    this.#turns = turns;
    this.emit = eventEmitter(rounds.options.onEvent);
    this.owner = {
      extend: (lock, ttl) => this.extend(lock, ttl),
      release: (lock) => this.release(lock),
      now: () => rounds.clock.now(),
      emit: this.emit,
    };
  }

  /** The state of a lock (or permit) that `grant` won: its validity, and its acquire replies still out. */
  held(grant: Grant, ttl: number, kind: LockKind = "lock"): Omit<LockState, "value" | "released" | "keys"> {
    const rounds = this.#rounds;
    return {
      owner: this.owner,
      kind,
      deadline: grant.start + ttl - rounds.drift(ttl),
      expiresAt: rounds.clock.epoch() + rounds.validity(ttl, grant.start),
      stragglers: this.#stragglers(grant.round),
    };
  }

  /**
   * A failed attempt: its tally, and the release of `keys` on every node where `grant` may have set them (with
   * `how.release`, sent with `keys` and `[value]`: a mutex's by default). With `how.requeue` (a fair waiter that keeps
   * waiting) a node is undone with its script instead ({@link REQUEUE} by default), which also puts the ticket back
   * in line there (the grant took it out), once the round's replies show the waiter can reach a quorum; when they
   * show it cannot, with `release`, so a waiter that can never win keeps nobody out. A waiter whose grant round won a
   * quorum yet failed (no validity left, or a fenced attempt's write-back fell short) missed its turn: its undo takes
   * the ticket out on every node, refusing ones included (`requeue.leave`, {@link LEAVE} by default), and its ticket
   * is renewed (`requeue.renew`), so it goes to the back of the line.
   */
  failed(
    attempt: number,
    round: Round,
    grant: Grant,
    ttl: number,
    keys: string[],
    how: { release?: Script; requeue?: Requeue } = {},
  ): { failed: AttemptTally; cleanup: Promise<void> } {
    const rounds = this.#rounds;
    const { release = RELEASE, requeue } = how;
    const value = grant.value;
    const released: Undo = { script: release, keys, args: [value] };
    // Served: the grant round won a quorum (a fenced attempt's write-back may then have failed or come too late); or
    // its ticket was out of step with the nodes' clock (it is renewed in step, the old one must go everywhere).
    const missedTurn = requeue !== undefined && (grant.round.granted >= rounds.quorum || requeue.stale === true);
    let undo: Undo = released;
    if (requeue) {
      const lineKeys = [...keys, ...requeue.queues];
      const { ticket } = requeue;
      if (missedTurn) {
        undo = { script: requeue.leave ?? LEAVE, keys: lineKeys, args: [value, ticket] };
        requeue.renew();
      } else {
        const requeued = { script: requeue.script ?? REQUEUE, keys: lineKeys, args: [value, ticket, requeue.lease] };
        undo = reachesQuorum(grant.round.settled, rounds.quorum).then((reaches) => (reaches ? requeued : released));
      }
    }
    return {
      failed: rounds.tally(attempt, round, grant.start, rounds.validity(ttl, grant.start)),
      cleanup: this.#releaseAfter(new Map(grant.round.settled.entries()), undo, missedTurn),
    };
  }

  /** See `Redlock.release`. */
  async release(lock: Lock): Promise<ReleaseResult> {
    const rounds = this.#rounds;
    const state = lockState(lock);
    state.released = true;
    state.expiresAt = Math.min(state.expiresAt, rounds.clock.epoch());
    // A fair lock leaves its queues in the same request (its ticket may still wait on nodes that denied it).
    const queue = state.queue;
    const script = state.scripts?.release ?? (queue ? LEAVE : RELEASE);
    const keys = queue ? [...state.keys, ...queue.keys] : [...state.keys];
    const args = queue ? [state.value, queue.ticket] : [state.value];
    // Acquire replies still out now may land after this release.
    const late = state.stragglers.size === 0 ? undefined : new Map(state.stragglers);
    state.stragglers.clear();
    const began = rounds.clock.now();
    const round = await rounds.round(script, keys, args, { decide: "answered", cancelStragglers: false });
    const { granted: released, errors } = round;
    if (queue) this.#turns?.ring(queue.keys);
    this.emit?.({
      type: "release",
      kind: state.kind,
      resources: lock.resources,
      released,
      errors,
      elapsedMs: rounds.clock.now() - began,
    });
    const after: Promise<unknown>[] = [];
    for (const vote of round.votes) if (vote.outcome === "unanswered") after.push(round.settled[vote.node]);
    for (const [node, acquired] of late ?? []) {
      after.push(
        (async () => {
          // Where this release deleted the keys, the acquire had run before it: nothing can land after.
          if ((await round.settled[node]).outcome === "granted") return;
          // A refused acquire set nothing, but a fair one may have put the ticket back in line: LEAVE takes it out.
          if ((await acquired).outcome !== "denied" || queue) await rounds.ask(node, script, keys, args);
        })(),
      );
    }
    const pending = Promise.all(after).then(() => undefined);
    return { released, errors, votes: round.votes, pending };
  }

  /**
   * A waiter that stops waiting leaves the queues of `keys` on every node (best effort, each request bounded
   * by nodeTimeout; an entry this misses, or an enqueue that lands after it, expires with its lease). Run
   * once every attempt's cleanup is over, so no request of the waiter's own is still on its way.
   */
  async leave(keys: readonly string[], ticket: string, script: Script = LEAVE): Promise<void> {
    const rounds = this.#rounds;
    // "-" is never a lock value: the script deletes nothing here, it only takes the ticket out.
    await Promise.all(rounds.nodes.map((_, node) => rounds.ask(node, script, [...keys], ["-", ticket])));
  }

  /** See `Redlock.extend`. */
  async extend(lock: Lock, ttl: number): Promise<Lock> {
    const emit = this.emit;
    if (!emit) return this.#extend(lock, ttl);
    const { kind } = lockState(lock);
    const resources = lock.resources;
    try {
      await this.#extend(lock, ttl);
      emit({ type: "extend", outcome: "extended", kind, resources, validityMs: lock.validityMs });
      return lock;
    } catch (error) {
      if (error instanceof LockExtensionError) {
        const tally = error.tally ? { tally: nodeTally(error.tally) } : {};
        emit({ type: "extend", outcome: "failed", kind, resources, reason: error.reason, ...tally });
      }
      throw error;
    }
  }

  async #extend(lock: Lock, ttl: number): Promise<Lock> {
    const rounds = this.#rounds;
    const state = lockState(lock);
    checkTtl(ttl, rounds.options.nodeTimeout);
    const keys = [...state.keys];
    if (state.released) throw new LockExtensionError(lock.resources, undefined, "released");
    const start = rounds.clock.now();
    if (start >= state.deadline) throw new LockExtensionError(lock.resources);
    // Stragglers run on (they move the expiry on the other nodes too). None can outlive a release:
    // the script only lengthens a key that still holds the value.
    const round = await rounds.round(state.scripts?.extend ?? EXTEND, keys, [state.value, String(ttl)], {
      decide: "outcome",
      cancelStragglers: false,
    });
    if (state.released) throw new LockExtensionError(lock.resources, undefined, "released");
    const validity = rounds.validity(ttl, start);
    if (round.granted < rounds.quorum || validity <= 0)
      throw nameNodes(
        new LockExtensionError(lock.resources, rounds.tally(1, round, start, validity)),
        rounds.nodes.map((node) => node.label),
      );
    state.deadline = start + ttl - rounds.drift(ttl);
    state.expiresAt = rounds.clock.epoch() + validity;
    return lock;
  }

  /**
   * Per node, the acquire reply still out when the round was decided; an entry leaves once its reply is
   * in and its request can no longer land (the acquire ran before any later release was sent). Release
   * undoes the entries left at its call.
   */
  #stragglers(round: Round): Map<number, Promise<Vote>> {
    const late = new Map<number, Promise<Vote>>();
    for (const vote of round.votes) {
      if (vote.outcome !== "unanswered") continue;
      const reply = round.settled[vote.node].then(async (settled) => {
        await this.#rounds.landed(settled);
        return settled;
      });
      late.set(vote.node, reply);
      void reply.then(() => late.delete(vote.node));
    }
    return late;
  }

  /**
   * Undoes each node once its outstanding acquire reply is in, except nodes that denied (they set nothing), unless
   * `evenDenied`: a missed turn's LEAVE also takes the old ticket out of line where the refusal queued it.
   */
  #releaseAfter(acquired: Map<number, Promise<Vote>>, undo: Undo, evenDenied = false): Promise<void> {
    return Promise.all(
      [...acquired].map(async ([node, reply]) => {
        const vote = await reply;
        await this.#rounds.landed(vote); // a release must not overtake the request it undoes
        if (vote.outcome === "denied" && !evenDenied) return;
        const { script, keys, args } = await undo;
        await this.#rounds.ask(node, script, keys, args);
      }),
    ).then(() => undefined);
  }
}

/** What undoes a failed attempt on a node: a script, its keys and its args. */
type Undo =
  | { script: Script; keys: string[]; args: string[] }
  | Promise<{ script: Script; keys: string[]; args: string[] }>;

/**
 * Whether a round's replies show its client can reach a quorum: true once `quorum` nodes answered (granted or
 * refused), false once too many failed for that; decided as soon as the replies in tell, not at the round's own
 * early decision (which a refusal can make before the failures are in).
 */
function reachesQuorum(settled: readonly Promise<Vote>[], quorum: number): Promise<boolean> {
  return new Promise((resolve) => {
    let answered = 0;
    let failed = 0;
    for (const reply of settled)
      void reply.then((vote) => {
        if (vote.outcome === "error") failed++;
        else answered++;
        if (answered >= quorum) resolve(true);
        else if (failed > settled.length - quorum) resolve(false);
      });
  });
}
