// A line's wakeup channel: the prefix and 20 hex digits of SHA-1 of the line's key (as the scripts derive it with
// redis.sha1hex), hashed once per line key while it is among the recent ones.
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WAKE_PREFIX } from "../../../src/scripts/queue.ts";
import { wakeChannel } from "../../../src/lock/waker.ts";

const expected = (key: string) => WAKE_PREFIX + createHash("sha1").update(key).digest("hex").slice(0, 20);

describe("wakeChannel", () => {
  afterEach(() => vi.restoreAllMocks());

  it("names each line's channel by its key's SHA-1, the same on every call", async () => {
    for (const key of ["edge-redlock:line:a", "edge-redlock:line:b", "edge-redlock:line:ü,\n"]) {
      expect(await wakeChannel(key)).toBe(expected(key));
      expect(await wakeChannel(key)).toBe(expected(key));
    }
  });

  it("hashes a recent line's key once, and still names a line right after many others pushed it out", async () => {
    const digest = vi.spyOn(crypto.subtle, "digest");
    await wakeChannel("edge-redlock:line:kept");
    await wakeChannel("edge-redlock:line:kept");
    expect(digest).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 300; i++) await wakeChannel(`edge-redlock:line:other:${i}`);
    expect(digest).toHaveBeenCalledTimes(301);
    expect(await wakeChannel("edge-redlock:line:kept")).toBe(expected("edge-redlock:line:kept"));
    expect(digest).toHaveBeenCalledTimes(302);
  });
});
