// Whether a flagged script may PUBLISH is found out by a probe beside the first script that publishes, in the same
// turn (so a batcher puts both in one request); the verdict decides which scripts keep Upstash's key-locking flag.
// A scripted `send` stands in for the node: it records what was sent, turn by turn, and answers as told.
import { afterEach, describe, expect, it, vi } from "vitest";
import { evalScript, type EvalCommand, type KeyLockingState } from "../../../src/node/run-script.ts";
import { ACQUIRE, FAIR_ACQUIRE, LEAVE } from "../../../src/scripts/index.ts";
import { PUBLISH_FROM_FLAGGED_SCRIPT } from "../../../src/scripts/publish-probe.ts";
import { KEY_LOCKING, type Script } from "../../../src/scripts/script.ts";

const REFUSED = "ERR PUBLISH is not allowed in Lua scripts when 'allow-key-locking' flag is set";

/** A node that answers every script 1, and the probe as `probe` says; `turns` groups what was sent in one turn. */
function node(probe: "accept" | "refuse" | "busy" | "fail" | "never") {
  const turns: EvalCommand[][] = [];
  let open: EvalCommand[] | undefined;
  const send = (command: EvalCommand): Promise<unknown> => {
    if (!open) {
      open = [];
      turns.push(open);
      queueMicrotask(() => {
        open = undefined;
      });
    }
    open.push(command);
    if (command.script !== PUBLISH_FROM_FLAGGED_SCRIPT) return Promise.resolve(1);
    if (probe === "accept") return Promise.resolve(0);
    if (probe === "refuse") return Promise.reject(new Error(REFUSED));
    if (probe === "fail") return Promise.reject(new TypeError("fetch failed"));
    if (probe === "busy") return Promise.reject(new Error("BUSY Redis is busy running a script. You can only call…"));
    return new Promise(() => {});
  };
  return { send, turns };
}

const state = (): KeyLockingState => ({ accepted: true, ran: new Set(), publish: "unknown" });
const run = (n: ReturnType<typeof node>, s: KeyLockingState, script: Script) =>
  evalScript(n.send, script, ["k", "edge-redlock:line:k"], ["v", "t", "1000"], new AbortController().signal, {
    keyLocking: s,
  });
const flagged = (c: EvalCommand) => c.kind === "eval" && c.script.startsWith(KEY_LOCKING);
const isProbe = (c: EvalCommand) => c.script === PUBLISH_FROM_FLAGGED_SCRIPT;
/** Whether every script the node got (the probe apart) carried the flag. */
const allFlagged = (n: ReturnType<typeof node>) =>
  n.turns
    .flat()
    .filter((c) => c.kind === "eval" && !isProbe(c))
    .every(flagged);
/** Lets the probe's verdict land. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

afterEach(() => vi.useRealTimers());

describe("the probe of PUBLISH from a flagged script", () => {
  it("goes out once, in the same turn as the first script that publishes, and never beside one that does not", async () => {
    const n = node("accept");
    const s = state();
    await run(n, s, ACQUIRE); // publishes nothing: no probe
    expect(n.turns.flat().some(isProbe)).toBe(false);
    await run(n, s, FAIR_ACQUIRE);
    await settled();
    expect(n.turns.at(-1)?.map(isProbe)).toEqual([true, false]);
    expect(s.publish).toBe("accepted");
    await run(n, s, LEAVE);
    expect(n.turns.flat().filter(isProbe)).toHaveLength(1);
    // Accepted: every script keeps the flag.
    expect(allFlagged(n)).toBe(true);
  });

  it("refused, the scripts that publish go without the flag from then on; the others keep it", async () => {
    const n = node("refuse");
    const s = state();
    await run(n, s, FAIR_ACQUIRE);
    await settled();
    expect(s.publish).toBe("refused");
    expect(s.accepted).toBe(true);
    await run(n, s, LEAVE);
    await run(n, s, ACQUIRE);
    const [leave, acquire] = n.turns.slice(-2).map((turn) => turn[0]);
    expect(flagged(leave)).toBe(false);
    expect(leave.script).toContain('"PUBLISH"');
    expect(flagged(acquire)).toBe(true);
    expect(n.turns.flat().filter(isProbe)).toHaveLength(1);
  });

  for (const [why, how] of [
    ["failed as a request fails", "fail"],
    ["met a passing error (BUSY)", "busy"],
  ] as const)
    it(`a probe that ${why} decides nothing: the next script that publishes asks again`, async () => {
      const n = node(how);
      const s = state();
      await expect(run(n, s, FAIR_ACQUIRE)).resolves.toBe(1);
      await settled();
      expect(s.publish).toBe("unknown");
      await run(n, s, LEAVE);
      expect(n.turns.at(-1)?.map(isProbe)).toEqual([true, false]);
      // Meanwhile the scripts keep the flag.
      expect(allFlagged(n)).toBe(true);
    });

  it("a probe whose reply never came is given up after 10 s, and the next script that publishes carries another", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const n = node("never");
    const s = state();
    await run(n, s, FAIR_ACQUIRE);
    await run(n, s, LEAVE);
    expect(n.turns.flat().filter(isProbe)).toHaveLength(1);
    vi.setSystemTime(Date.now() + 10_001);
    await run(n, s, LEAVE);
    expect(n.turns.flat().filter(isProbe)).toHaveLength(2);
  });
});
