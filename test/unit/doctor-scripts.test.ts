// The doctor's list of script runs is the one place a new script is added: every script the
// `edge-redlock/scripts` entry exports must have a run there, or this fails.
import { describe, expect, it } from "vitest";
import * as scripts from "../../src/scripts/index.ts";
import { SCRIPT_TRIALS, judgeTrials, trialCommands, trialKeys, trialScripts } from "../../src/doctor/script-trials.ts";

const exported = Object.entries(scripts).filter(
  ([, value]) => typeof value === "object" && value !== null && "lua" in value && "vote" in value,
) as [string, scripts.Script][];

describe("the doctor's script trials", () => {
  it("run every script the scripts entry exports", () => {
    expect(exported.length).toBeGreaterThanOrEqual(8);
    const tried = new Set(SCRIPT_TRIALS.map((t) => t.script));
    expect(exported.filter(([, script]) => !tried.has(script)).map(([name]) => name)).toEqual([]);
  });

  it("load each Lua source once, and send the flagged form only where asked", () => {
    expect(new Set(trialScripts().map((s) => s.lua)).size).toBe(trialScripts().length);
    const keys = trialKeys("p");
    const flagged = trialCommands(keys, "v", "1000", true);
    const plain = trialCommands(keys, "v", "1000", false);
    expect(flagged).toHaveLength(SCRIPT_TRIALS.length + 1);
    expect(flagged.slice(0, -1).every((c) => c[1].startsWith(scripts.KEY_LOCKING) || c[1].startsWith("#!lua flags=no-writes,allow-key-locking"))).toBe(true);
    expect(plain.slice(0, -1).some((c) => c[1].includes("allow-key-locking"))).toBe(false);
    expect(flagged.at(-1)).toEqual(["DEL", ...Object.values(keys)]);
  });

  it("name the first run whose reply is an error or the wrong vote", () => {
    const good = SCRIPT_TRIALS.map((t) => ({ result: t.expect === "denied" ? [0, 1000] : t.script.name === "acquire" && t.label.startsWith("fenced") ? [1, "1"] : t.script === scripts.RELEASE ? 1 : t.script === scripts.FENCED_WRITE ? 1 : t.script === scripts.INSPECT ? [] : [1] }));
    expect(judgeTrials(good)).toBeUndefined();
    const fenced = SCRIPT_TRIALS.findIndex((t) => t.label === "fenced acquire");
    const refused = good.map((p, i) => (i === fenced ? { error: "ERR no writes after TIME" } : p));
    expect(judgeTrials(refused)).toBe("fenced acquire: ERR no writes after TIME");
    const bare = good.map((p, i) => (i === fenced ? { result: [1] } : p));
    expect(judgeTrials(bare)).toMatch(/^fenced acquire: an unexpected reply/);
  });
});
