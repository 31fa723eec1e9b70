// Client crashes: terminate a holder in the middle of its critical section, with the cluster otherwise
// quiet, and see its lock come free once its ttl has run out.
import { sleep, type Bed } from "./bed.ts";
import { sharedNow, type ChaosRecord, type EnterRecord } from "./records.ts";
import type { Holding, ResourceWatch } from "./watch.ts";

export interface CrashOptions {
  /** How long the victim's section is asked to last; the crash comes at a random moment inside it. */
  sectionMs: number;
  /** The checker's allowance on top of the ttl (the scenario keeps other faults away that long). */
  freeSlackMs: number;
  index: number;
  /** The resources a victim may be picked on (default: any). */
  resources?: string[];
}

const enterOf =
  (client: number) =>
  (r: ChaosRecord): r is EnterRecord =>
    r.type === "enter" && r.client === client;

/**
 * Driven step by step (many contenders would otherwise livelock and blur "free within the ttl"):
 * 1. wait until no fault is in force; pick a victim X and a successor Y on one resource, hold every other client back;
 * 2. ask X for a section of `sectionMs` and terminate X's worker at a random moment inside it (no release);
 * 3. let Y contend alone: it must win once X's keys expire (the checker judges: within ttl + slack of
 *    X's section start); then let the others go and, after that deadline, start X again.
 * Returns a line for the progress output.
 */
export async function crashMidSection(
  bed: Bed,
  watch: ResourceWatch,
  random: () => number,
  options: CrashOptions,
): Promise<string> {
  await bed.quiet();
  const alive = Array.from({ length: bed.pool.count }, (_, c) => c).filter((c) => bed.pool.alive(c));
  const eligible = alive.filter(
    (c) => options.resources === undefined || options.resources.includes(bed.pool.resourceOf(c)),
  );
  if (eligible.length === 0)
    return `client crash ${options.index}: missed (no live client on ${options.resources?.join(", ")})`;
  const resource = bed.pool.resourceOf(eligible[Math.floor(random() * eligible.length)]);
  const candidates = alive.filter((c) => bed.pool.resourceOf(c) === resource);
  if (candidates.length < 2) return `client crash ${options.index}: missed (too few live clients on ${resource})`;
  const x = candidates.splice(Math.floor(random() * candidates.length), 1)[0];
  const y = candidates.splice(Math.floor(random() * candidates.length), 1)[0];
  // Everybody but X waits (other resources too: "free within the ttl" is judged on a quiet bed).
  const others = alive.filter((c) => c !== x && c !== y);
  const heldBack = [y, ...others];
  for (const c of heldBack) bed.pool.send(c, { pause: true });
  const letGo = (clients: number[]) => {
    for (const c of clients) bed.pool.send(c, { pause: false });
  };
  try {
    for (let tries = 0; tries < 3; tries++) {
      bed.pool.send(x, { holdNext: options.sectionMs });
      const enter = await bed.pool.next(enterOf(x), 4 * bed.ttl);
      if (!enter) break;
      if (!enter.holdMs) continue;
      await sleep(enter.start + (0.1 + 0.8 * random()) * options.sectionMs - sharedNow());
      if (bed.pool.openSection(x)?.id !== enter.id) continue;

      // X's lock value as the nodes hold it (compared only, never logged): to see it expire over TCP.
      const value = mostHeld(await watch.holders(resource));
      const successor = bed.pool.next(enterOf(y), bed.ttl + options.freeSlackMs + 1_000);
      const crash = await bed.pool.crash(x, "nemesis");
      letGo([y]);
      const gone = await watch.until(resource, (held) => held.every((h) => h !== value && h !== "down"), 2 * bed.ttl);
      const goneAt = sharedNow();
      const taken = await successor;
      letGo(others);
      await sleep(enter.start + bed.ttl + options.freeSlackMs + 50 - sharedNow());
      bed.pool.restart(x);
      const keys = gone.ok
        ? `its keys seen gone from every node at +${Math.round(goneAt - enter.start)} ms (TCP poll every 10 ms)`
        : "its keys still on some node";
      const after = taken
        ? `client ${y} acquired ${Math.round(taken.start - enter.start)} ms after it began (ttl ${bed.ttl} ms)`
        : `client ${y} did not acquire in time`;
      const into = Math.round(crash.at - enter.start);
      return `client crash ${options.index}: client ${x} terminated ${into} ms into its section; ${keys}; ${after}`;
    }
    return `client crash ${options.index}: missed (client ${x} never held a long section)`;
  } finally {
    bed.pool.send(x, { holdNext: 0 });
    letGo(heldBack);
  }
}

/** The value most nodes hold (the holder's), or undefined. */
function mostHeld(held: Holding[]): string | undefined {
  const values = held.filter((h): h is string => h !== null && h !== "down");
  return values.sort((a, b) => values.filter((v) => v === b).length - values.filter((v) => v === a).length)[0];
}
