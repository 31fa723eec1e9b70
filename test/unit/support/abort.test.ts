// Announced aborts: a plain AbortSignal cannot be watched; an announcing one takes one watcher, told once, after the
// signal's own listeners; an unwatched signal tells nobody.
import { describe, expect, it } from "vitest";
import { announceAbort, announcingController, unwatchAbort, watchAbort } from "../../../src/support/abort.ts";

describe("announced aborts", () => {
  it("a plain signal is not watchable; an announcing one takes one watcher, told once after its listeners", () => {
    expect(watchAbort(new AbortController().signal, { aborted: () => {} })).toBe(false);
    const controller = announcingController();
    const order: string[] = [];
    controller.signal.addEventListener("abort", () => order.push("listener"));
    expect(watchAbort(controller.signal, { aborted: () => order.push("watcher") })).toBe(true);
    expect(watchAbort(controller.signal, { aborted: () => order.push("second") })).toBe(false);
    announceAbort(controller, new Error("cut"));
    announceAbort(controller, new Error("again"));
    expect(order).toEqual(["listener", "watcher"]);
    expect(controller.signal.reason).toEqual(new Error("cut"));
  });

  it("an unwatched signal tells nobody", () => {
    const controller = announcingController();
    const told: AbortSignal[] = [];
    const watcher = { aborted: (s: AbortSignal) => void told.push(s) };
    watchAbort(controller.signal, watcher);
    unwatchAbort(controller.signal, watcher);
    announceAbort(controller, new Error("cut"));
    expect(told).toEqual([]);
  });
});
