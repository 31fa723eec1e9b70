// anySignal where the runtime has no AbortSignal.any: it aborts with the first reason, and once it has aborted it
// leaves no listener on the signals it combined, so a caller's long-lived signal does not gather one per sleep;
// followSignals can also let go of them without aborting.
import { afterEach, describe, expect, it, vi } from "vitest";
import { anySignal, followSignals } from "../../../src/support/clock.ts";

/** A signal that counts the abort listeners it holds. */
function countedSignal(): { controller: AbortController; listeners: () => number } {
  const controller = new AbortController();
  const signal = controller.signal;
  let held = 0;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
    if (type === "abort") held++;
    add(type, listener, options);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((type: string, listener: EventListener) => {
    if (type === "abort") held--;
    remove(type, listener);
  }) as typeof signal.removeEventListener;
  return { controller, listeners: () => held };
}

describe("anySignal without AbortSignal.any", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("aborts with the reason of the first signal that aborts", () => {
    vi.stubGlobal("AbortSignal", Object.assign(Object.create(AbortSignal), { any: undefined }));
    const [a, b] = [new AbortController(), new AbortController()];
    const both = anySignal([a.signal, b.signal, undefined]);
    expect(both.aborted).toBe(false);
    b.abort("b first");
    a.abort("a later");
    expect(both.reason).toBe("b first");
  });

  it("takes its listeners off the caller's signal once one of its own aborts: a thousand uses leave none", () => {
    vi.stubGlobal("AbortSignal", Object.assign(Object.create(AbortSignal), { any: undefined }));
    const caller = countedSignal();
    for (let i = 0; i < 1_000; i++) {
      const own = new AbortController();
      anySignal([caller.controller.signal, own.signal]);
      own.abort();
    }
    expect(caller.listeners()).toBe(0);
    // Still combined while in use: the caller's abort reaches a combination not yet done with.
    const own = new AbortController();
    const live = anySignal([caller.controller.signal, own.signal]);
    expect(caller.listeners()).toBe(1);
    caller.controller.abort("stop");
    expect(live.reason).toBe("stop");
    expect(caller.listeners()).toBe(0);
  });

  it("adds no listener when a signal has aborted already", () => {
    vi.stubGlobal("AbortSignal", Object.assign(Object.create(AbortSignal), { any: undefined }));
    const caller = countedSignal();
    const done = new AbortController();
    done.abort("already");
    const both = anySignal([caller.controller.signal, done.signal]);
    expect(both.reason).toBe("already");
    expect(caller.listeners()).toBe(0);
  });

  it("followSignals' dispose takes its listeners off without aborting the combination", () => {
    vi.stubGlobal("AbortSignal", Object.assign(Object.create(AbortSignal), { any: undefined }));
    const caller = countedSignal();
    const keeper = new AbortController();
    const followed = followSignals([caller.controller.signal, keeper.signal]);
    expect(caller.listeners()).toBe(1);
    followed.dispose();
    expect(caller.listeners()).toBe(0);
    expect(followed.signal.aborted).toBe(false);
    // No longer following: what a routine handed back keeps working with it.
    caller.controller.abort("later");
    expect(followed.signal.aborted).toBe(false);
  });
});
