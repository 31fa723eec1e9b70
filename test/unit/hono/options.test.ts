// Review 22: the middlewares now refuse a junk `redlock` option when the route is defined, but a class passed where
// an instance or a factory is wanted (`{ redlock: Redlock }`, a JavaScript user's slip) is a function, so it passes;
// every request then fails with a TypeError ("Class constructor … cannot be invoked without 'new'"), not the
// InvalidArgumentError the other junk gets.
import { describe, expect, it } from "vitest";
import { InvalidArgumentError, Redlock, RedlockMutex } from "../../src/index.ts";
import { readWrite, redlock, semaphore } from "../../src/hono/index.ts";

describe("a class as the redlock option", () => {
  for (const [name, kind] of [["Redlock", Redlock], ["RedlockMutex", RedlockMutex]] as const) {
    it(`redlock(), semaphore() and readWrite() refuse ${name} itself when the route is defined`, () => {
      expect(() => redlock("k", { redlock: kind as never })).toThrow(InvalidArgumentError);
      expect(() => semaphore("k", { limit: 2, redlock: kind as never })).toThrow(InvalidArgumentError);
      expect(() => readWrite("k", { redlock: kind as never })).toThrow(InvalidArgumentError);
    });
  }
});
