// The middlewares refuse a class passed as the `redlock` option (`{ redlock: Redlock }`, a JavaScript user's slip
// where an instance or a factory is wanted) when the route is defined, with InvalidArgumentError like any other junk:
// it is a function, but not one a request could call ("Class constructor … cannot be invoked without 'new'").
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
