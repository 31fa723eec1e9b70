// The doctor's list of script runs is the one place a new script is added: every script the
// `edge-redlock/scripts` entry exports must have a run there (or be listed as sent to a resource's
// database, not to a lock node), or this fails.
import { describe, expect, it } from "vitest";
import * as scripts from "../../../src/scripts/index.ts";
import {
  RESOURCE_SCRIPTS,
  SCRIPT_TRIALS,
  judgeTrials,
  trialCommands,
  trialKeys,
  trialScripts,
} from "../../../src/doctor/script-trials.ts";

const exported = Object.entries(scripts).filter(
  ([, value]) => typeof value === "object" && value !== null && "lua" in value && "vote" in value,
) as [string, scripts.Script][];

describe("the doctor's script trials", () => {
  it("run every script the scripts entry exports that goes to a lock node; the rest are the resource side's", () => {
    expect(exported.length).toBeGreaterThanOrEqual(12);
    const tried = new Set(SCRIPT_TRIALS.map((t) => t.script));
    const resource = new Set(RESOURCE_SCRIPTS);
    expect(exported.filter(([, script]) => !tried.has(script) && !resource.has(script)).map(([name]) => name)).toEqual(
      [],
    );
    expect(RESOURCE_SCRIPTS.map((s) => s.name)).toEqual(["fenced-write", "fenced-read"]);
    expect(SCRIPT_TRIALS.some((t) => resource.has(t.script))).toBe(false);
  });

  it("load each Lua source once, and send the flagged form only where asked", () => {
    expect(new Set(trialScripts().map((s) => s.lua)).size).toBe(trialScripts().length);
    const keys = trialKeys("p");
    const flagged = trialCommands(keys, "v", "1000", true);
    const plain = trialCommands(keys, "v", "1000", false);
    expect(flagged).toHaveLength(SCRIPT_TRIALS.length + 1);
    expect(
      flagged
        .slice(0, -1)
        .every(
          (c) => c[1].startsWith(scripts.KEY_LOCKING) || c[1].startsWith("#!lua flags=no-writes,allow-key-locking"),
        ),
    ).toBe(true);
    expect(plain.slice(0, -1).some((c) => c[1].includes("allow-key-locking"))).toBe(false);
    expect(flagged.at(-1)).toEqual(["DEL", ...Object.values(keys)]);
  });

  it("name the first run whose reply is an error or the wrong vote", () => {
    // What a healthy node answers to each run (the shapes the library's vote rules accept).
    const replies: Record<string, unknown> = {
      acquire: [1],
      "acquire (held)": [0, 60_000],
      extend: [1],
      release: 1,
      "fair acquire": [1],
      "fair acquire (held: joins the queue)": [0, 60_000, 0],
      leave: 1,
      "fenced fair acquire": [1, "1732406400000001"],
      "leave (fenced)": 1,
      "fair acquire (again)": [1],
      requeue: 1,
      "fair acquire (the requeued waiter ahead)": [0, -2, 1],
      "leave (requeued)": 0,
      "leave (the other)": 0,
      "fenced acquire": [1, "1732406400000002"],
      fence: [1],
      "semaphore acquire": [1],
      "fair semaphore acquire": [1],
      inspect: [[["v", 60_000]], 0],
      "read acquire": [1],
      "read extend": [1],
      "write acquire (a reader holds: joins the queue)": [0, 60_000, 0],
      "read release": 1,
      "fenced write acquire": [1, "1732406400000003"],
      "read-write inspect": ["v-w", 60_000, []],
      "leave (writer)": 1,
      "read release, requeued (a waiting reader's undo)": 0,
      "release (lock and permits)": 2,
    };
    expect(SCRIPT_TRIALS.map((t) => t.label).sort()).toEqual(Object.keys(replies).sort());
    const good = SCRIPT_TRIALS.map((t) => ({ result: replies[t.label] }));
    expect(judgeTrials(good)).toBeUndefined();
    const fenced = SCRIPT_TRIALS.findIndex((t) => t.label === "fenced acquire");
    const refused = good.map((p, i) => (i === fenced ? { error: "ERR no writes after TIME" } : p));
    expect(judgeTrials(refused)).toBe("fenced acquire: ERR no writes after TIME");
    const bare = good.map((p, i) => (i === fenced ? { result: [1] } : p));
    expect(judgeTrials(bare)).toMatch(/^fenced acquire: an unexpected reply/);
  });
});
