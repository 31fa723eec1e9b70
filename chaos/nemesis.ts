// The targeted nemesis: arrange that a holder holds the resource on exactly a quorum, then crash one
// node of that quorum. With the delayed-restart rule the node stays away longer than the ttl and nobody
// else can win while the holder is valid; restarted empty at once (--unsafe-restart), the crashed node and
// the two others form a second quorum and a contender wins inside the holder's validity.
import { sleep, type Bed } from "./bed.ts";
import type { QuorumCrashPlan } from "./faults.ts";
import { sharedNow, type ChaosRecord, type Cut, type EnterRecord } from "./records.ts";
import { heldExactlyOn, type ResourceWatch } from "./watch.ts";

export interface QuorumCrashOptions {
  /** The resource to strike. */
  resource: string;
  /** How long the holder is asked to work (within its validity): the window a contender has. */
  holdMs: number;
  /** Safe mode: how long the crashed node stays down (must exceed the maximum ttl). */
  restartDelayMs: number;
  /** For the progress line. */
  index: number;
}

const enterOf =
  (client: number) =>
  (r: ChaosRecord): r is EnterRecord =>
    r.type === "enter" && r.client === client;

/**
 * One scenario, run with the cluster to itself (no other fault in flight). Driven step by step rather
 * than left to chance: with many clients contending for a win that needs every one of three nodes,
 * Redlock's randomized retries livelock for seconds, so the nemesis holds the contenders back itself.
 * 1. pick a holder X and a first contender Y among the resource's clients; hold every other client back;
 * 2. fail the plan's two other nodes for every client with HTTP 503 (a refused request never runs: for
 *    the checker a solid cut; a cut or a hang would leave every attempt waiting out nodeTimeout there);
 * 3. wait (over TCP) until those two nodes hold nothing of the resource;
 * 4. ask X for a long section and wait until X holds the resource on exactly the quorum (checked over TCP);
 * 5. crash (SIGKILL) the plan's victim, a node of that quorum, and let the two failed nodes answer again;
 * 6. restart the victim empty: at once with --unsafe-restart, else after `restartDelayMs` (> the ttl);
 * 7. let Y contend alone, then the others once Y holds or X's section is over.
 * Logged as one `quorum-crash` fault with its cut. Returns a line for the progress output.
 */
export async function quorumCrash(
  bed: Bed,
  watch: ResourceWatch,
  plan: QuorumCrashPlan,
  random: () => number,
  options: QuorumCrashOptions,
): Promise<string> {
  const { quorum, cut, victim } = plan;
  const { resource } = options;
  const bridges = bed.cluster.bridges;
  const candidates = Array.from({ length: bed.pool.count }, (_, c) => c).filter(
    (c) => bed.pool.resourceOf(c) === resource && bed.pool.alive(c),
  );
  const at = sharedNow();
  const cuts: Cut[] = [];
  let struck = false;
  let cutFrom: number | undefined;
  const heal = () => {
    if (cutFrom === undefined) return;
    cuts.push({ clients: "all", nodes: cut, from: cutFrom, to: sharedNow() });
    cutFrom = undefined;
    for (const node of cut) bridges[node].setFaults({ status: null });
  };
  const outcome = (detail: string): string => {
    heal();
    bed.write({
      type: "fault",
      kind: "quorum-crash",
      target: `node ${victim}`,
      at,
      until: sharedNow(),
      cuts,
      struck,
      detail,
    });
    return `nemesis ${options.index}: ${struck ? "" : "missed: "}${detail}`;
  };
  if (candidates.length < 2) return outcome(`too few live clients on ${resource}`);
  const x = candidates.splice(Math.floor(random() * candidates.length), 1)[0];
  const y = candidates.splice(Math.floor(random() * candidates.length), 1)[0];
  // Everybody but X waits (other resources too: the bed is the scenario's alone); Y goes first, then the rest.
  const others = Array.from({ length: bed.pool.count }, (_, c) => c).filter((c) => c !== x && c !== y);
  const heldBack = new Set([y, ...others]);
  const release = (clients: number[]) => {
    for (const c of clients) if (heldBack.delete(c)) bed.pool.send(c, { pause: false });
  };
  for (const c of heldBack) bed.pool.send(c, { pause: true });
  for (const node of cut) bridges[node].setFaults({ status: 503 });
  cutFrom = sharedNow();

  try {
    const clean = await watch.until(resource, (held) => cut.every((node) => held[node] === null), 2 * bed.ttl + 500);
    if (!clean.ok) return outcome(`nodes ${cut.join("+")} never came clean`);

    let holder: EnterRecord | undefined;
    const deadline = Date.now() + 4 * bed.ttl;
    while (!holder && Date.now() < deadline) {
      bed.pool.send(x, { holdNext: options.holdMs });
      const enter = await bed.pool.next(enterOf(x), deadline - Date.now());
      if (!enter) break;
      // Only a section that took the hint works long enough; the TCP look confirms exactly the quorum.
      if (enter.holdMs && heldExactlyOn(await watch.holders(resource), quorum)) holder = enter;
    }
    bed.pool.send(x, { holdNext: 0 });
    if (!holder) return outcome(`client ${x} never held exactly nodes ${quorum.join("+")}`);

    bed.down.add(victim);
    await bed.cluster.servers[victim].kill();
    const crashedAt = sharedNow();
    struck = true;
    heal();
    if (!bed.unsafeRestart) await sleep(options.restartDelayMs - (sharedNow() - crashedAt));
    await bed.cluster.servers[victim].start();
    await bridges[victim].ready();
    bed.down.delete(victim);
    const backAt = sharedNow();

    const xOpen = () => bed.pool.openSection(x)?.id === holder.id;
    let rival: EnterRecord | undefined;
    const stopWatching = bed.pool.listen((r) => {
      if (r.type === "enter" && r.client === y) rival ??= r;
    });
    release([y]);
    await until(() => rival !== undefined || !xOpen(), 3 * bed.ttl);
    release(others);
    await until(() => !xOpen(), 3 * bed.ttl);
    stopWatching();
    const inside = rival && rival.start < Math.min(holder.validityEnd, holder.start + options.holdMs);
    const rivalText = rival
      ? `client ${y} acquired at +${ms(rival.start - crashedAt)} ms` +
        (inside ? " — INSIDE the holder's validity" : ", after the holder's section")
      : `client ${y} did not acquire while client ${x} held`;
    return outcome(
      `client ${x} (fence ${holder.fence}) held exactly nodes ${quorum.join("+")} (503 on ${cut.join("+")}); ` +
        `node ${victim} crashed at +${ms(crashedAt - holder.start)} ms into its section, ` +
        `back empty ${ms(backAt - crashedAt)} ms later; ${rivalText}`,
    );
  } finally {
    heal();
    release([...heldBack]);
  }
}

async function until(done: () => boolean, timeoutMs: number): Promise<undefined> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await sleep(10);
  return undefined;
}

function ms(t: number): number {
  return Math.round(t);
}
