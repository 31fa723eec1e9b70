// The semaphore's targeted scenario: rotated windows. Each semaphore client reaches only a quorum of the
// nodes, rotated so that every node is reached by exactly `limit` clients (5 clients, 5 nodes, limit 3).
// A per-node counting semaphore then admits every client (no node ever sees more than 3 holders) and
// over-admits; the sound semaphore (slots that are mutexes) still admits at most `limit`.
import { linkName, sleep, type Bed } from "./bed.ts";
import { planSemaphoreWindows } from "./faults.ts";
import { sharedNow, type Cut } from "./records.ts";
import { permitsHeldOn, type PermitKeys, type ResourceWatch } from "./watch.ts";

export interface WindowsOptions {
  /** The semaphore resource and its clients (their number: one window each). */
  resource: string;
  clients: number[];
  /** Where the permits live on the nodes, to see them over TCP. */
  keys: PermitKeys;
  /** How long each client is asked to hold its permit (within its validity). */
  holdMs: number;
  /** The token every link takes (the nodes'), for the reachability probes. */
  token: string;
  index: number;
}

/**
 * Driven step by step, with the bed to itself:
 * 1. wait until no fault is in force; hold every client back;
 * 2. wait (over TCP) until no node holds a live permit;
 * 3. cut each semaphore client's links outside its window; probe every (client, node) link with a PING
 *    and check that exactly the window answers;
 * 4. let the semaphore clients go, each asked for a long section (`holdMs`), each held back again as it
 *    enters; look at the nodes over TCP every 20 ms and keep the look with the most permits held on a quorum;
 * 5. once every client entered (or after 2 × ttl), wait for the sections to end, heal, let everybody go.
 * Logged as one `semaphore-windows` fault with its cuts and the TCP look. Returns a line for the progress output.
 */
export async function semaphoreWindows(
  bed: Bed,
  watch: ResourceWatch,
  random: () => number,
  options: WindowsOptions,
): Promise<string> {
  await bed.quiet();
  const { clients, keys } = options;
  const quorum = Math.floor(bed.nodes / 2) + 1;
  const plan = planSemaphoreWindows(random, clients, bed.nodes);
  const shape = plan.windows.map((w, j) => `${clients[j]}→${w.join("+")}`).join(" ");
  const everybody = Array.from({ length: bed.pool.count }, (_, c) => c);
  const at = sharedNow();
  const cuts: Cut[] = [];
  let heldOn: number[][] = [];
  let cutFrom: number | undefined;
  const heal = () => {
    if (cutFrom === undefined) return;
    bed.cut(plan.cuts, false);
    const to = sharedNow();
    cuts.push(...plan.cuts.map((g) => ({ clients: g.clients, nodes: g.nodes, from: cutFrom!, to })));
    cutFrom = undefined;
  };
  const outcome = (detail: string): string => {
    heal();
    bed.write({
      type: "fault",
      kind: "semaphore-windows",
      target: `clients ${clients.join(",")}`,
      at,
      until: sharedNow(),
      cuts,
      heldOn,
      detail,
    });
    return `semaphore windows ${options.index}: ${detail}`;
  };
  for (const c of everybody) bed.pool.send(c, { pause: true });
  const entered = new Set<number>();
  const stopListening = bed.pool.listen((r) => {
    if (r.type !== "enter" || !clients.includes(r.client) || entered.has(r.client)) return;
    entered.add(r.client);
    bed.pool.send(r.client, { pause: true });
  });
  try {
    if (clients.some((c) => !bed.pool.alive(c))) return outcome("missed: a semaphore client is not running");
    const clean = await watch.untilPermits(
      keys,
      (held) => held.every((h) => h !== "down" && h.length === 0),
      2 * bed.ttl + 500,
    );
    if (!clean.ok) return outcome("missed: the nodes never came clean of permits");

    bed.partitioned = true;
    bed.cut(plan.cuts, true);
    cutFrom = sharedNow();
    const reached = await Promise.all(
      clients.map((c) =>
        Promise.all(
          bed.cluster.bridges.slice(0, bed.nodes).map((bridge) => probe(bridge.addLink(linkName(c)), options.token)),
        ),
      ),
    );
    const wrong = clients.filter((_, j) => reached[j].some((ok, n) => ok !== plan.windows[j].includes(n)));
    if (wrong.length)
      return outcome(`missed: the probes disagree with the windows for clients ${wrong.join(",")} (${shape})`);

    entered.clear(); // only the sections of the windows count from here
    for (const c of clients) bed.pool.send(c, { holdNext: options.holdMs, pause: false });
    const deadline = Date.now() + 2 * bed.ttl;
    const openOnes = () => clients.filter((c) => bed.pool.openSection(c) !== undefined);
    while (Date.now() < deadline && (entered.size < clients.length || openOnes().length > 0)) {
      const look = permitsHeldOn(await watch.permits(keys)).filter((nodes) => nodes.length >= quorum);
      if (look.length > heldOn.length) heldOn = look;
      if (entered.size === clients.length && openOnes().length === 0) break;
      await sleep(20);
    }
    for (const c of clients) bed.pool.send(c, { holdNext: 0, pause: true });
    await until(() => openOnes().length === 0, 2 * bed.ttl);
    const seen = heldOn.map((nodes) => nodes.join("+")).join(", ") || "none";
    return outcome(
      `windows ${shape} (probes: each client reached exactly its window); ${entered.size} of ${clients.length} ` +
        `entered; most permits on a quorum at one TCP look: ${heldOn.length} (${seen})`,
    );
  } finally {
    stopListening();
    heal();
    bed.partitioned = false;
    for (const c of clients) bed.pool.send(c, { holdNext: 0 });
    for (const c of everybody) bed.pool.send(c, { pause: false });
  }
}

/** Whether a PING through `link` answers within 250 ms (a cut link holds the request unanswered). */
async function probe(link: Promise<string>, token: string): Promise<boolean> {
  try {
    const res = await fetch(await link, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify(["ping"]),
      signal: AbortSignal.timeout(250),
    });
    return res.ok;
  } catch {
    return false;
  }
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await sleep(10);
}
