// Every script the library may send to a lock node, run once on each node in the order a lock's life sends
// them, so an engine that refuses one (a write after TIME, a rule of its own) fails the doctor instead of
// production. A new script is one more entry in SCRIPT_TRIALS (or in RESOURCE_SCRIPTS); a unit test fails
// while a script of the `edge-redlock/scripts` entry is in neither.
import { FAIR_ACQUIRE, FENCED_FAIR_ACQUIRE, LEAVE, REQUEUE } from "../scripts/fair-mutex.ts";
import { ACQUIRE, EXTEND, FENCED_ACQUIRE, RELEASE } from "../scripts/lock.ts";
import { FENCE, FENCED_READ, FENCED_WRITE } from "../scripts/fencing.ts";
import { INSPECT } from "../scripts/inspect.ts";
import type { Script } from "../scripts/script.ts";
import { withoutKeyLocking } from "../scripts/script.ts";
import {
  FENCED_RW_WRITE_ACQUIRE,
  RW_INSPECT,
  RW_READ_ACQUIRE,
  RW_READ_EXTEND,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
} from "../scripts/rw.ts";
import { FAIR_SEMAPHORE_ACQUIRE, SEMAPHORE_ACQUIRE } from "../scripts/semaphore.ts";

/** The keys one node's trials use, each under the doctor's probe prefix (expiring, and deleted after). */
export interface TrialKeys {
  lock: string;
  fence: string;
  slot1: string;
  slot2: string;
  /** The lock's wait queue (fair waiting). */
  queue: string;
  /** The semaphore's wait queue. */
  slotQueue: string;
  /** A read-write lock's writer key, reader set and wait queue. */
  writer: string;
  readers: string;
  rwQueue: string;
}

/** One run of one script: what it is sent and the vote its reply must give. */
export interface ScriptTrial {
  /** Names the run in a failure text. */
  label: string;
  script: Script;
  keys(k: TrialKeys): string[];
  /** `value` is the trial's lock value, `ttl` the keys' lifetime in ms. */
  args(value: string, ttl: string): string[];
  expect: "granted" | "denied";
}

/**
 * The trial's `n`-th ticket in the line's form: this host's epoch ms (16 digits), `n` (16 hex digits: the order of
 * the trial's waiters), a claim window of 200 ms. Taken when the trials run, so it is in step with a node whose
 * clock agrees with this host's; where it is not, the scripts refuse it as they refuse any ticket out of step.
 */
let epoch: { value: string; ms: number } | undefined;
const ticket = (n: number, value: string) => {
  // One time for every ticket of one run (the trials share the run's lock value).
  const root = value.replace(/-(?:other|w)$/, "");
  if (epoch?.value !== root) epoch = { value: root, ms: Date.now() };
  return `${String(epoch.ms).padStart(16, "0")}${n.toString(16).padStart(16, "0")}00200`;
};

/** A fair acquire's arguments: value, ttl, one resource, the waiter's ticket, its entry's life, join, the age. */
const fair = (n: number) => (v: string, ttl: string) => [v, ttl, "1", ticket(n, v), ttl, "1", "0"];

/** A read-write acquire's arguments: value, ttl, the line member (ticket and `r` or `w`), its life, join, age. */
const rw = (n: number, kind: "r" | "w") => (v: string, ttl: string) => [v, ttl, ticket(n, v) + kind, ttl, "1", "0"];

/**
 * The runs, in order: each may rely on the ones before it on the same node (one pipeline, members in
 * order). The fenced acquires are the ones that call `TIME` before writing.
 */
export const SCRIPT_TRIALS: readonly ScriptTrial[] = [
  { label: "acquire", script: ACQUIRE, keys: (k) => [k.lock], args: (v, ttl) => [v, ttl], expect: "granted" },
  {
    label: "acquire (held)",
    script: ACQUIRE,
    keys: (k) => [k.lock],
    args: (v, ttl) => [`${v}-other`, ttl],
    expect: "denied",
  },
  { label: "extend", script: EXTEND, keys: (k) => [k.lock], args: (v, ttl) => [v, ttl], expect: "granted" },
  { label: "release", script: RELEASE, keys: (k) => [k.lock], args: (v) => [v], expect: "granted" },
  { label: "fair acquire", script: FAIR_ACQUIRE, keys: (k) => [k.lock, k.queue], args: fair(1), expect: "granted" },
  {
    label: "fair acquire (held: joins the queue)",
    script: FAIR_ACQUIRE,
    keys: (k) => [k.lock, k.queue],
    args: (v, ttl) => fair(2)(`${v}-other`, ttl),
    expect: "denied",
  },
  { label: "leave", script: LEAVE, keys: (k) => [k.lock, k.queue], args: (v) => [v, ticket(1, v)], expect: "granted" },
  {
    label: "fenced fair acquire",
    script: FENCED_FAIR_ACQUIRE,
    keys: (k) => [k.lock, k.queue, k.fence],
    args: fair(2),
    expect: "granted",
  },
  {
    label: "leave (fenced)",
    script: LEAVE,
    keys: (k) => [k.lock, k.queue],
    args: (v) => [v, ticket(2, v)],
    expect: "granted",
  },
  {
    label: "fair acquire (again)",
    script: FAIR_ACQUIRE,
    keys: (k) => [k.lock, k.queue],
    args: fair(3),
    expect: "granted",
  },
  {
    label: "requeue",
    script: REQUEUE,
    keys: (k) => [k.lock, k.queue],
    args: (v, ttl) => [v, ticket(3, v), ttl],
    expect: "granted",
  },
  {
    label: "fair acquire (the requeued waiter ahead)",
    script: FAIR_ACQUIRE,
    keys: (k) => [k.lock, k.queue],
    args: (v, ttl) => fair(4)(`${v}-other`, ttl),
    expect: "denied",
  },
  {
    label: "leave (requeued)",
    script: LEAVE,
    keys: (k) => [k.lock, k.queue],
    args: (v) => [v, ticket(3, v)],
    expect: "denied",
  },
  {
    label: "leave (the other)",
    script: LEAVE,
    keys: (k) => [k.lock, k.queue],
    args: (v) => [`${v}-other`, ticket(4, v)],
    expect: "denied",
  },
  {
    label: "fenced acquire",
    script: FENCED_ACQUIRE,
    keys: (k) => [k.lock, k.fence],
    args: (v, ttl) => [v, ttl, "1"],
    expect: "granted",
  },
  { label: "fence", script: FENCE, keys: (k) => [k.lock, k.fence], args: (v) => [v, "1"], expect: "granted" },
  {
    label: "semaphore acquire",
    script: SEMAPHORE_ACQUIRE,
    keys: (k) => [k.slot1, k.slot2],
    args: (v, ttl) => [v, ttl, "1"],
    expect: "granted",
  },
  {
    label: "fair semaphore acquire",
    script: FAIR_SEMAPHORE_ACQUIRE,
    keys: (k) => [k.slot1, k.slot2, k.slotQueue],
    args: (v, ttl) => [v, ttl, "2", ticket(1, v), ttl, "1", "0"],
    expect: "granted",
  },
  { label: "inspect", script: INSPECT, keys: (k) => [k.lock, k.slot1], args: () => [], expect: "granted" },
  {
    label: "read acquire",
    script: RW_READ_ACQUIRE,
    keys: (k) => [k.writer, k.readers, k.rwQueue],
    args: rw(1, "r"),
    expect: "granted",
  },
  {
    label: "read extend",
    script: RW_READ_EXTEND,
    keys: (k) => [k.readers],
    args: (v, ttl) => [v, ttl],
    expect: "granted",
  },
  {
    label: "write acquire (a reader holds: joins the queue)",
    script: RW_WRITE_ACQUIRE,
    keys: (k) => [k.writer, k.readers, k.rwQueue],
    args: (v, ttl) => rw(2, "w")(`${v}-w`, ttl),
    expect: "denied",
  },
  {
    label: "read release",
    script: RW_READ_RELEASE,
    keys: (k) => [k.readers, k.rwQueue],
    args: (v) => [v, `${ticket(1, v)}r`],
    expect: "granted",
  },
  {
    label: "fenced write acquire",
    script: FENCED_RW_WRITE_ACQUIRE,
    keys: (k) => [k.writer, k.readers, k.rwQueue, k.fence],
    args: (v, ttl) => rw(2, "w")(`${v}-w`, ttl),
    expect: "granted",
  },
  {
    label: "read-write inspect",
    script: RW_INSPECT,
    keys: (k) => [k.writer, k.readers],
    args: () => [],
    expect: "granted",
  },
  {
    label: "leave (writer)",
    script: LEAVE,
    keys: (k) => [k.writer, k.rwQueue],
    args: (v) => [`${v}-w`, `${ticket(2, v)}w`],
    expect: "granted",
  },
  {
    label: "read release, requeued (a waiting reader's undo)",
    script: RW_READ_RELEASE,
    keys: (k) => [k.readers, k.rwQueue],
    args: (v) => [v, `${ticket(3, v)}r`, "300"],
    expect: "denied",
  },
  {
    label: "release (lock and permits)",
    script: RELEASE,
    keys: (k) => [k.lock, k.slot1, k.slot2],
    args: (v) => [v],
    expect: "granted",
  },
];

/**
 * The scripts the library sends to the database that holds a protected resource (`fencedWrite`,
 * `fencedRead`), not to the lock nodes the doctor is given: not run by the doctor.
 */
export const RESOURCE_SCRIPTS: readonly Script[] = [FENCED_WRITE, FENCED_READ];

/**
 * The scripts of {@link SCRIPT_TRIALS}, each Lua source once (the fenced acquire is the acquire's Lua).
 */
export function trialScripts(): Script[] {
  const seen = new Set<string>();
  return SCRIPT_TRIALS.map((t) => t.script).filter((s) => !seen.has(s.lua) && seen.add(s.lua) !== undefined);
}

/**
 * The trial keys under `prefix` (one node's probe key).
 */
export function trialKeys(prefix: string): TrialKeys {
  const key = (name: string) => `${prefix}:script:${name}`;
  return {
    lock: key("lock"),
    fence: key("fence"),
    slot1: key("slot1"),
    slot2: key("slot2"),
    queue: key("queue"),
    slotQueue: key("slot-queue"),
    writer: key("rw-writer"),
    readers: key("rw-readers"),
    rwQueue: key("rw-queue"),
  };
}

/**
 * The commands that run every trial (EVAL, with the key-locking flag where the node accepts it, as the
 * library sends it) and then delete the trial keys.
 */
export function trialCommands(keys: TrialKeys, value: string, ttl: string, flagged: boolean): string[][] {
  const runs = SCRIPT_TRIALS.map((t) => {
    const lua = flagged ? t.script.lua : withoutKeyLocking(t.script.lua);
    const k = t.keys(keys);
    return ["EVAL", lua, String(k.length), ...k, ...t.args(value, ttl)];
  });
  return [...runs, ["DEL", ...Object.values(keys)]];
}

/**
 * Judges the replies of {@link trialCommands} (each `{ result }` or `{ error }`): undefined when every
 * script gave the vote it should, else each run that did not, named, joined by "; ".
 */
export function judgeTrials(parts: readonly { result?: unknown; error?: string }[]): string | undefined {
  const failures = SCRIPT_TRIALS.flatMap((trial, i) => {
    const part = parts[i];
    if (part === undefined) return [`${trial.label}: no reply`];
    if (part.error !== undefined) return [`${trial.label}: ${part.error}`];
    const vote = trial.script.vote(part.result);
    if (vote.outcome === trial.expect) return [];
    const said = vote.outcome === "error" ? `an unexpected reply (${vote.cause})` : vote.outcome;
    return [`${trial.label}: ${said} where the script should have ${trial.expect}`];
  });
  return failures.length === 0 ? undefined : failures.join("; ");
}
