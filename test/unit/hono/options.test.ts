// The middlewares refuse a class passed as the `redlock` option (`{ redlock: Redlock }`, a JavaScript user's slip
// where an instance or a factory is wanted) when the route is defined, with InvalidArgumentError like any other junk:
// it is a function, but not one a request could call ("Class constructor … cannot be invoked without 'new'"). A fixed
// key the lock would refuse, and a ttl of 0, are refused there too, in words that say what works.
import { describe, expect, it } from "vitest";
import { InvalidArgumentError, Redlock, RedlockMutex } from "../../../src/index.ts";
import { readWrite, redlock, semaphore } from "../../../src/hono/index.ts";

describe("a class as the redlock option", () => {
  for (const [name, kind] of [
    ["Redlock", Redlock],
    ["RedlockMutex", RedlockMutex],
  ] as const) {
    it(`redlock(), semaphore() and readWrite() refuse ${name} itself when the route is defined`, () => {
      expect(() => redlock("k", { redlock: kind as never })).toThrow(InvalidArgumentError);
      expect(() => semaphore("k", { limit: 2, redlock: kind as never })).toThrow(InvalidArgumentError);
      expect(() => readWrite("k", { redlock: kind as never })).toThrow(InvalidArgumentError);
    });
  }
});

describe("a fixed key the lock would refuse", () => {
  it("is refused when the route is defined, named key, not on every request with a bare 500", () => {
    expect(() => redlock("")).toThrow("key must be a non-empty string");
    expect(() => redlock(["a", ""])).toThrow("key[1] must be a non-empty string");
    expect(() => redlock("edge-redlock:line:x")).toThrow(/^key /);
    expect(() => semaphore("", { limit: 2 })).toThrow("key must be a non-empty string");
    expect(() => readWrite("")).toThrow("key must be a non-empty string");
    // A key computed per request is checked per request.
    expect(() => redlock(() => "")).not.toThrow();
  });

  it("a ttl of 0 names the default Redlock's nodeTimeout as the bound", () => {
    expect(() => redlock("k", { ttl: 0 })).toThrow("ttl must be greater than nodeTimeout (500 ms); got 0");
  });
});
