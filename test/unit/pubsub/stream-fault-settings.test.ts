// The admin API's stream faults as the fault gate reads them: dropMessages (a count the gate spends one by
// one) and messageDelayMs, both non-negative, both cleared by a reset to NO_FAULTS.
import { describe, expect, it } from "vitest";
import { FaultGate, NO_FAULTS, parseFaults } from "../../../dev/fault-gate.ts";

describe("stream fault settings", () => {
  it("parses dropMessages as a whole count and messageDelayMs as ms, never negative", () => {
    expect(parseFaults('{"dropMessages": 3, "messageDelayMs": 250}')).toEqual({ dropMessages: 3, messageDelayMs: 250 });
    expect(parseFaults('{"dropMessages": 2.7, "messageDelayMs": -5}')).toEqual({ dropMessages: 2, messageDelayMs: 0 });
    expect(parseFaults('{"dropMessages": "lots", "messageDelayMs": null}')).toEqual({
      dropMessages: 0,
      messageDelayMs: 0,
    });
    expect(parseFaults('{"dropMessages": -1}')).toEqual({ dropMessages: 0 });
  });

  it("spends dropMessages one message at a time, then lets messages through", () => {
    const gate = new FaultGate();
    expect(gate.dropsMessage()).toBe(false);
    gate.set({ dropMessages: 2 });
    expect([gate.dropsMessage(), gate.dropsMessage(), gate.dropsMessage()]).toEqual([true, true, false]);
    expect(gate.faults.dropMessages).toBe(0);
  });

  it("leaves request gating alone: a gate with only stream faults lets requests straight through", () => {
    const gate = new FaultGate();
    gate.set({ dropMessages: 5, messageDelayMs: 1_000 });
    expect(gate.open).toBe(true);
    gate.set({ ...NO_FAULTS });
    expect(gate.faults).toEqual(NO_FAULTS);
    expect(NO_FAULTS).toMatchObject({ dropMessages: 0, messageDelayMs: 0 });
  });
});
