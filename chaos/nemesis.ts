// The targeted nemesis: arrange that a holder holds the resource on exactly a quorum, then crash one
// node of that quorum. With the delayed-restart rule the node stays away longer than the ttl and nobody
// else can win while the holder is valid; restarted empty at once (--unsafe-restart), the crashed node and
// the two others form a second quorum and a contender wins inside the holder's validity.
import { sleep, type Bed } from "./bed.ts";
import type { QuorumCrashPlan } from "./faults.ts";
import { sharedNow, type ChaosRecord, type Cut, type EnterRecord } from "./records.ts";
import { heldExactlyOn, type ResourceWatch } from "./watch.ts";

export interface QuorumCrashOptions {
  /** The resource to strike (its clients get the long-section hint). */
  resource: string;
  /** How long the holder is asked to work (within its validity): the window a contender has. */
  holdMs: number;
  /** Safe mode: how long the crashed node stays down (must exceed the maximum ttl). */
  restartDelayMs: number;
  /** For the progress line. */
  index: number;
}

const isEnterOn = (resource: string) => (r: ChaosRecord): r is EnterRecord => r.type === "enter" && r.resource === resource;

/**
 * One scenario, run with the cluster to itself (no other fault in flight):
 * 1. fail the plan's two other nodes for every client (HTTP 503 at once: with a cut or a hang there,
 *    every contended attempt waited out nodeTimeout on them before it could fail, and 16 contenders
 *    livelocked for seconds; a 503 never runs the command, so it is still a solid cut for the checker);
 * 2. wait (over TCP) until they hold nothing of the resource;
 * 3. ask the resource's clients for a long next section and wait for a holder whose key is on exactly
 *    the quorum (checked over TCP);
 * 4. crash (SIGKILL) the plan's victim, a node of that quorum, and heal the cut;
 * 5. restart the victim empty: at once with --unsafe-restart, else after `restartDelayMs`;
 * 6. wait for the holder's section to end. Logged as one `quorum-crash` fault with its cut.
 * Returns a line for the progress output.
 */
export async function quorumCrash(bed: Bed, watch: ResourceWatch, plan: QuorumCrashPlan, options: QuorumCrashOptions): Promise<string> {
  const { quorum, cut, victim } = plan;
  const { resource } = options;
  const bridges = bed.cluster.bridges;
  const onResource = (client: number) => bed.pool.resourceOf(client) === resource;
  const at = sharedNow();
  const cuts: Cut[] = [];
  let struck = false;
  let detail: string;
  const seen: EnterRecord[] = [];
  const stopSeeing = bed.pool.listen((r) => void (r.type === "enter" && r.resource === resource && seen.push(r)));

  for (const node of cut) bridges[node].setFaults({ status: 503 });
  const cutFrom = sharedNow();
  let healed = false;
  const heal = () => {
    if (healed) return;
    healed = true;
    cuts.push({ clients: "all", nodes: cut, from: cutFrom, to: sharedNow() });
    for (const node of cut) bridges[node].setFaults({ status: null });
  };

  try {
    const clean = await watch.until(resource, (held) => cut.every((node) => held[node] === null), 2 * bed.ttl + 500);
    if (!clean.ok) {
      detail = `nodes ${cut.join("+")} never came clean`;
      return outcome();
    }

    let holder: EnterRecord | undefined;
    const deadline = Date.now() + 4 * bed.ttl;
    while (!holder && Date.now() < deadline) {
      bed.pool.broadcast({ holdNext: options.holdMs }, onResource);
      const enter = await bed.pool.next(isEnterOn(resource), deadline - Date.now());
      if (!enter) break;
      // Only a holder that took the hint (it acquired after the hint arrived) works long enough.
      if (enter.holdMs && heldExactlyOn(await watch.holders(resource), quorum)) holder = enter;
    }
    bed.pool.broadcast({ holdNext: 0 }, onResource);
    if (!holder) {
      detail = `no holder on exactly nodes ${quorum.join("+")}`;
      return outcome();
    }

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

    const stillOpen = () => bed.pool.openSection(holder.client)?.id === holder.id;
    const until = Date.now() + 3 * bed.ttl;
    while (stillOpen() && Date.now() < until) await sleep(20);
    const rival = seen.find((e) => e !== holder && e.start > holder.start);
    const rivalText = rival
      ? `next holder client ${rival.client} at +${ms(rival.start - crashedAt)} ms${rival.start < Math.min(holder.validityEnd, holder.start + options.holdMs) ? " — INSIDE the holder's validity" : ""}`
      : "no other holder during the scenario";
    detail =
      `client ${holder.client} (fence ${holder.fence}) held exactly nodes ${quorum.join("+")} (cut ${cut.join("+")}); ` +
      `node ${victim} crashed at +${ms(crashedAt - holder.start)} ms into its section, back empty ${ms(backAt - crashedAt)} ms later; ${rivalText}`;
    return outcome();
  } finally {
    heal();
    stopSeeing();
  }

  function outcome(): string {
    heal();
    bed.write({ type: "fault", kind: "quorum-crash", target: `node ${victim}`, at, until: sharedNow(), cuts, struck, detail });
    return `nemesis ${options.index}: ${struck ? "" : "missed: "}${detail}`;
  }
}

function ms(t: number): number {
  return Math.round(t);
}
