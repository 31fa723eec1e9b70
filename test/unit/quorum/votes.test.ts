// castVote never rejects: every failure of a node is an error vote — node.run throwing synchronously, rejecting with
// something that is not an Error, and script.vote throwing on a reply no rule reads. fanOut would turn a rejection
// into an error vote, but Rounds.ask (release follow-ups, cleanups, leave) would pass it on.
import { describe, expect, it } from "vitest";
import { castVote } from "../../../src/node/outcome.ts";
import type { RedlockNode } from "../../../src/node/node.ts";
import { ACQUIRE } from "../../../src/scripts/index.ts";
import type { Script } from "../../../src/scripts/script.ts";

const live = () => new AbortController().signal;
const node = (run: RedlockNode["run"]): RedlockNode => ({ label: "n", run });

describe("castVote: every failure is an error vote (it never rejects)", () => {
  it("node.run throwing synchronously", async () => {
    const vote = await castVote(
      node(() => {
        throw new Error("sync boom");
      }),
      ACQUIRE,
      ["k"],
      ["v", "1000"],
      live(),
    );
    expect(vote).toEqual({ outcome: "error", cause: "sync boom" });
  });

  it("node.run rejecting with a value that is not an Error, and resolving with a non-promise", async () => {
    expect(
      await castVote(
        node(() => Promise.reject("plain")),
        ACQUIRE,
        ["k"],
        ["v", "1000"],
        live(),
      ),
    ).toMatchObject({ outcome: "error" });
    expect(
      await castVote(
        node(() => [1] as unknown as Promise<unknown>),
        ACQUIRE,
        ["k"],
        ["v", "1000"],
        live(),
      ),
    ).toEqual({ outcome: "granted" });
  });

  it("script.vote throwing on a reply (as the comment in castVote promises)", async () => {
    const throwing: Script = {
      name: "acquire",
      lua: ACQUIRE.lua,
      vote: () => {
        throw new TypeError("no rule reads this reply");
      },
    };
    const vote = await castVote(
      node(async () => [1]),
      throwing,
      ["k"],
      ["v", "1000"],
      live(),
    ).catch((e: unknown) => ({ rejected: String(e) }));
    expect(vote).toMatchObject({ outcome: "error" });
  });
});
