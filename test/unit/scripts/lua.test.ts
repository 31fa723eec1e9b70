// The Lua scripts: a reply becomes a vote only in its exact shape (acquire, extend and fence: exactly [1] grants and
// [0, pttl] denies; a fenced acquire grants only [1, fence]; release: a non-negative integer), anything else is an
// error; keys and values stay out of the Lua source; EVALSHA digests from Web Crypto match SHA-1.
import { describe, expect, it } from "vitest";
import { ACQUIRE, EXTEND, FENCE, FENCED_ACQUIRE, RELEASE, scriptSha } from "../../../src/scripts/index.ts";
import { createHash } from "node:crypto";

describe("replies become votes only in their exact shape", () => {
  it("acquire, extend and fence: exactly [1] grants, [0, pttl] denies, anything else is an error", () => {
    for (const script of [ACQUIRE, EXTEND, FENCE]) {
      expect(script.vote([1])).toEqual({ outcome: "granted" });
      expect(script.vote([0, 1234])).toEqual({ outcome: "denied", pttl: 1234 });
      expect(script.vote([0, -1])).toEqual({ outcome: "denied", pttl: -1 });
      expect(script.vote([0, -2])).toEqual({ outcome: "denied", pttl: -2 });
      for (const reply of [
        [1, "12"],
        [1, 7],
        [1, "18446744073709551617"],
        1,
        "OK",
        "1",
        [1, "x"],
        [1, "1", 2],
        ["1"],
        [true],
        [0],
        [0, "5"],
        [0, -3],
        [0, 1.5],
        [2],
        null,
        undefined,
        {},
        { result: [1] },
        "<html>",
      ]) {
        expect(script.vote(reply).outcome, `${script.name} ${JSON.stringify(reply)}`).toBe("error");
      }
    }
  });

  it("fenced acquire: only [1, fence] grants (fence exact, beyond 2^53 too), [0, pttl] denies, a bare [1] is an error", () => {
    expect(FENCED_ACQUIRE.vote([1, "18446744073709551617"])).toEqual({
      outcome: "granted",
      fence: "18446744073709551617",
    });
    expect(FENCED_ACQUIRE.vote([1, 7])).toEqual({ outcome: "granted", fence: "7" });
    expect(FENCED_ACQUIRE.vote([0, 99])).toEqual({ outcome: "denied", pttl: 99 });
    for (const reply of [[1], [1, "x"], [1, "007"], [1, -1], [1, 1.5], [1, 2 ** 60], [1, "1", 2], [0], null]) {
      expect(FENCED_ACQUIRE.vote(reply).outcome, JSON.stringify(reply)).toBe("error");
    }
    expect(FENCED_ACQUIRE.lua).toBe(ACQUIRE.lua);
  });

  it("release: a non-negative integer; > 0 means released", () => {
    expect(RELEASE.vote(2)).toEqual({ outcome: "granted" });
    expect(RELEASE.vote(0)).toEqual({ outcome: "denied" });
    for (const reply of [-1, "1", 1.5, [1], null, "OK"]) expect(RELEASE.vote(reply).outcome).toBe("error");
  });

  it("keeps keys and values out of the Lua source", () => {
    for (const script of [ACQUIRE, RELEASE, EXTEND]) {
      expect(script.lua).not.toMatch(/loadstring|load\(|redis\.call\("EVAL/i);
      expect(script.lua).toContain("KEYS[i]");
    }
  });

  it("computes EVALSHA digests with Web Crypto that match SHA-1", async () => {
    for (const script of [ACQUIRE, RELEASE, EXTEND]) {
      expect(await scriptSha(script.lua)).toBe(createHash("sha1").update(script.lua).digest("hex"));
    }
  });
});
