// Review 21 (fixed: a throwing rule is caught inside the handler): castVote became `.then((value) => script.vote(value), failed)`. Its comment says a reply that
// no rule reads (script.vote throws) "stays an error vote"; a throw in the fulfilment handler does not reach
// `failed` (the second argument of the same .then), so castVote rejects instead. (The async version before
// the change rejected too: the comment claims a guarantee neither version gives.) fanOut turns a rejection
// into an error vote, but Rounds.ask (release follow-ups, cleanups, leave) passes it on.
import { describe, expect, it } from "vitest";
import { castVote } from "../../src/node/outcome.ts";
import type { RedlockNode } from "../../src/node/node.ts";
import { ACQUIRE } from "../../src/scripts/index.ts";
import type { Script } from "../../src/scripts/script.ts";

const live = () => new AbortController().signal;
const node = (run: RedlockNode["run"]): RedlockNode => ({ label: "n", run });

describe("castVote: every failure is an error vote (it never rejects)", () => {
  it("node.run throwing synchronously", async () => {
    const vote = await castVote(node(() => { throw new Error("sync boom"); }), ACQUIRE, ["k"], ["v", "1000"], live());
    expect(vote).toEqual({ outcome: "error", cause: "sync boom" });
  });

  it("node.run rejecting with a value that is not an Error, and resolving with a non-promise", async () => {
    expect(await castVote(node(() => Promise.reject("plain")), ACQUIRE, ["k"], ["v", "1000"], live())).toMatchObject({ outcome: "error" });
    expect(await castVote(node(() => [1] as unknown as Promise<unknown>), ACQUIRE, ["k"], ["v", "1000"], live())).toEqual({ outcome: "granted" });
  });

  it("script.vote throwing on a reply (as the comment in castVote promises)", async () => {
    const throwing: Script = { name: "acquire", lua: ACQUIRE.lua, vote: () => { throw new TypeError("no rule reads this reply"); } };
    const vote = await castVote(node(async () => [1]), throwing, ["k"], ["v", "1000"], live()).catch((e: unknown) => ({ rejected: String(e) }));
    expect(vote).toMatchObject({ outcome: "error" });
  });
});
