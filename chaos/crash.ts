// Client crashes: terminate a holder in the middle of its critical section, with the cluster otherwise
// quiet, and see its lock come free once its ttl has run out.
import { sleep, type Bed } from "./bed.ts";
import { sharedNow, type ChaosRecord, type EnterRecord } from "./records.ts";

const isEnter = (r: ChaosRecord): r is EnterRecord => r.type === "enter";

export interface CrashOptions {
  /** Wait up to this long inside the section before the crash. */
  maxDelayMs: number;
  /** The checker's allowance on top of the ttl (so the scenario keeps the cluster quiet that long). */
  freeSlackMs: number;
  index: number;
}

/**
 * Waits for a client to enter a section, terminates it a random moment later (while the section is
 * still open), keeps every other fault away until the crashed lock's ttl + slack has passed, then
 * starts the client again. Returns a line for the progress output.
 */
export async function crashMidSection(bed: Bed, random: () => number, options: CrashOptions): Promise<string> {
  await bed.quiet();
  for (let tries = 0; tries < 5; tries++) {
    const enter = await bed.pool.next(isEnter, 4 * bed.ttl);
    if (!enter) break;
    await sleep(Math.round(random() * options.maxDelayMs));
    if (bed.pool.openSection(enter.client)?.id !== enter.id) continue;
    const next = bed.pool.next((r): r is EnterRecord => isEnter(r) && r.resource === enter.resource, bed.ttl + options.freeSlackMs + 1_000);
    const crash = await bed.pool.crash(enter.client, "nemesis");
    const taken = await next;
    const deadline = enter.start + bed.ttl + options.freeSlackMs;
    await sleep(deadline - sharedNow() + 50);
    bed.pool.restart(enter.client);
    const after = taken ? `client ${taken.client} acquired ${Math.round(taken.start - enter.start)} ms after the crashed section began (ttl ${bed.ttl} ms)` : "nobody acquired it in time";
    return `client crash ${options.index}: client ${enter.client} terminated ${Math.round(crash.at - enter.start)} ms into its section; ${after}`;
  }
  return `client crash ${options.index}: missed (no section stayed open long enough)`;
}
