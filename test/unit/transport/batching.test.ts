// The batcher's rules with a scripted transport: a lone command goes as a plain request; the commands of one turn go
// as one pipeline request (at most MAX_BATCH each), each with its own reply, never across a timer; a member whose
// signal aborts stops waiting at once, told when the request it still rides in is over, while the others get their
// replies (also with the lock's own announcing signals); the pipeline request is cut once every member stopped
// waiting; members that aborted before the batch went out are left out; a reply without one outcome per command fails
// every member. test/integration/transport/batching.test.ts checks the same through @upstash/redis against real Redis.
import { describe, expect, it } from "vitest";
import { Abandoned, batching, type Outcome, type Transport } from "../../../src/node/batch.ts";
import { announceAbort, announcingController } from "../../../src/support/abort.ts";

interface Call {
  kind: "one" | "many";
  commands: string[];
  signal: AbortSignal;
}

/** A transport that records each request and answers when `answer` is called (or at once). */
function scripted(options: { hold?: boolean; reply?: (command: string) => Outcome } = {}) {
  const calls: Call[] = [];
  const waiting: (() => void)[] = [];
  const reply = options.reply ?? ((command: string): Outcome => ({ ok: true, value: `reply:${command}` }));
  const later = <T>(value: () => T, signal: AbortSignal) =>
    new Promise<T>((resolve, reject) => {
      const go = () => (signal.aborted ? reject(signal.reason) : resolve(value()));
      if (options.hold) waiting.push(go);
      else go();
    });
  const transport: Transport<string> = {
    one(command, signal) {
      calls.push({ kind: "one", commands: [command], signal });
      return later(() => {
        const outcome = reply(command);
        if (!outcome.ok) throw new Error(outcome.error);
        return outcome.value;
      }, signal);
    },
    many(commands, signal) {
      calls.push({ kind: "many", commands, signal });
      return later(() => commands.map(reply), signal);
    },
  };
  const answer = () => {
    for (const go of waiting.splice(0)) go();
  };
  return { transport, calls, answer };
}

const live = () => new AbortController().signal;
const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe("batching", () => {
  it("sends a lone command as a plain request", async () => {
    const { transport, calls } = scripted();
    const send = batching(transport);
    expect(await send("a", live())).toBe("reply:a");
    expect(calls.map((c) => [c.kind, c.commands])).toEqual([["one", ["a"]]]);
  });

  it("sends the commands of one turn as one pipeline request, each with its own reply", async () => {
    const { transport, calls } = scripted({
      reply: (c) => (c === "bad" ? { ok: false, error: "ERR bad" } : { ok: true, value: `reply:${c}` }),
    });
    const send = batching(transport);
    // Sent synchronously, and a few microtasks apart: both are one turn.
    const first = Promise.all(["a", "bad", "c"].map((c) => settled(send(c, live()))));
    const later = Promise.resolve()
      .then(() => undefined)
      .then(() => settled(send("d", live())));
    expect(await first).toEqual([{ value: "reply:a" }, { error: new Error("ERR bad") }, { value: "reply:c" }]);
    expect(await later).toEqual({ value: "reply:d" });
    expect(calls.map((c) => [c.kind, c.commands])).toEqual([["many", ["a", "bad", "c", "d"]]]);
  });

  it("never batches across a timer", async () => {
    const { transport, calls } = scripted();
    const send = batching(transport);
    const a = send("a", live());
    await new Promise((r) => setTimeout(r, 0));
    const b = send("b", live());
    await Promise.all([a, b]);
    expect(calls.map((c) => [c.kind, c.commands])).toEqual([
      ["one", ["a"]],
      ["one", ["b"]],
    ]);
  });

  it("a member whose signal aborts stops waiting at once, told when the request it still rides in is over; the others get their replies", async () => {
    const { transport, calls, answer } = scripted({ hold: true });
    const send = batching(transport);
    const quitter = new AbortController();
    const a = send("a", quitter.signal).catch((e: unknown) => e);
    const b = settled(send("b", live()));
    await new Promise((r) => setTimeout(r, 0)); // the batch is out, its reply held back
    expect(calls).toHaveLength(1);
    quitter.abort(new Error("gave up"));
    const abandoned = (await a) as Abandoned;
    expect(abandoned).toBeInstanceOf(Abandoned);
    expect(abandoned.reason).toEqual(new Error("gave up"));
    expect(calls[0].signal.aborted).toBe(false);
    let over = false;
    void abandoned.landed.then(() => (over = true));
    await new Promise((r) => setTimeout(r, 0));
    expect(over).toBe(false); // its command still rides in the request
    answer();
    expect(await b).toEqual({ value: "reply:b" });
    await abandoned.landed;
  });

  it("splits a turn's commands into pipeline requests of at most MAX_BATCH commands", async () => {
    const { transport, calls } = scripted();
    const send = batching(transport);
    await Promise.all(Array.from({ length: 150 }, (_, i) => send(String(i), live())));
    expect(calls.map((c) => c.commands.length)).toEqual([64, 64, 22]);
  });

  it("a rider goes in the first request and never counts toward MAX_BATCH: it adds a command, not a request", async () => {
    const { transport, calls } = scripted();
    const send = batching(transport);
    const rider = send("rider", live(), true);
    const replies = await Promise.all(Array.from({ length: 128 }, (_, i) => send(String(i), live())));
    expect(await rider).toBe("reply:rider");
    expect(replies[127]).toBe("reply:127");
    expect(calls.map((c) => c.commands.length)).toEqual([65, 64]);
    expect(calls[0].commands[0]).toBe("rider");
    // Beside one command, the two go as one pipeline request; alone, a rider is a plain request.
    calls.length = 0;
    await Promise.all([send("r", live(), true), send("a", live())]);
    await send("alone", live(), true);
    expect(calls.map((c) => [c.kind, c.commands])).toEqual([
      ["many", ["r", "a"]],
      ["one", ["alone"]],
    ]);
  });

  it("cuts the pipeline request when every member has stopped waiting", async () => {
    const { transport, calls } = scripted({ hold: true });
    const send = batching(transport);
    const controllers = [new AbortController(), new AbortController()];
    const replies = controllers.map((c, i) => settled(send(String(i), c.signal)));
    await new Promise((r) => setTimeout(r, 0));
    controllers[0].abort(new Error("first"));
    expect(calls[0].signal.aborted).toBe(false);
    controllers[1].abort(new Error("second"));
    expect(calls[0].signal.aborted).toBe(true);
    const [first, second] = (await Promise.all(replies)) as { error: unknown }[];
    expect(first.error).toBeInstanceOf(Abandoned); // the request still ran when it gave up
    expect((first.error as Abandoned).reason).toEqual(new Error("first"));
    expect(second).toEqual({ error: new Error("second") }); // the last one cut it: nothing rides on
  });

  it("leaves out members that aborted before the batch went out, and sends nothing when none is left", async () => {
    const { transport, calls } = scripted();
    const send = batching(transport);
    const aborted = new AbortController();
    const a = settled(send("a", aborted.signal));
    const b = settled(send("b", live()));
    aborted.abort(new Error("early"));
    expect(await Promise.all([a, b])).toEqual([{ error: new Error("early") }, { value: "reply:b" }]);
    expect(calls.map((c) => [c.kind, c.commands])).toEqual([["one", ["b"]]]);
    const gone = new AbortController();
    gone.abort(new Error("before"));
    expect(await settled(send("c", gone.signal))).toEqual({ error: new Error("before") });
    expect(calls).toHaveLength(1);
  });

  it("fails every member when the pipeline reply does not hold one outcome per command", async () => {
    const transport: Transport<string> = { one: async () => "x", many: async () => [{ ok: true, value: 1 }] };
    const send = batching(transport);
    const replies = await Promise.all(["a", "b"].map((c) => settled(send(c, live()))));
    expect(replies).toEqual([
      { error: new Error("unexpected pipeline reply") },
      { error: new Error("unexpected pipeline reply") },
    ]);
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A transport that records each request and holds every reply until `answer`. */
function held() {
  const calls: { commands: string[]; signal: AbortSignal }[] = [];
  const waiting: (() => void)[] = [];
  const transport: Transport<string> = {
    one: (command, signal) =>
      new Promise((resolve) => waiting.push(() => resolve(`reply:${command}`))).then((v) => {
        signal.throwIfAborted();
        return v;
      }),
    many: (commands, signal) => {
      calls.push({ commands, signal });
      return new Promise<Outcome[]>((resolve, reject) =>
        waiting.push(() =>
          signal.aborted ? reject(signal.reason) : resolve(commands.map((c) => ({ ok: true, value: `reply:${c}` }))),
        ),
      );
    },
  };
  const answer = () => {
    for (const go of waiting.splice(0)) go();
  };
  return { transport, calls, answer };
}

describe("a batch of announcing signals (the lock's own requests)", () => {
  it("a member whose signal aborts stops waiting at once, told when its request is over; the others get their replies", async () => {
    const { transport, calls, answer } = held();
    const send = batching(transport);
    const quitter = announcingController();
    const stays = announcingController();
    const a = send("a", quitter.signal).catch((e: unknown) => e);
    const b = settled(send("b", stays.signal));
    await sleep(0);
    expect(calls).toHaveLength(1);
    announceAbort(quitter, new Error("gave up"));
    const abandoned = (await a) as Abandoned;
    expect(abandoned).toBeInstanceOf(Abandoned);
    expect(abandoned.reason).toEqual(new Error("gave up"));
    expect(calls[0].signal.aborted).toBe(false);
    let over = false;
    void abandoned.landed.then(() => (over = true));
    await sleep(0);
    expect(over).toBe(false);
    answer();
    expect(await b).toEqual({ value: "reply:b" });
    await abandoned.landed;
    // Once the request is over, the signals are no longer followed: a later abort tells nobody.
    announceAbort(stays, new Error("late"));
  });

  it("cuts the pipeline request when every member stopped, announcing and plain signals mixed", async () => {
    const { transport, calls } = held();
    const send = batching(transport);
    const own = announcingController();
    const caller = new AbortController();
    const replies = [settled(send("own", own.signal)), settled(send("caller", caller.signal))];
    await sleep(0);
    announceAbort(own, new Error("first"));
    expect(calls[0].signal.aborted).toBe(false);
    caller.abort(new Error("second"));
    expect(calls[0].signal.aborted).toBe(true);
    const [first, second] = (await Promise.all(replies)) as { error: unknown }[];
    expect(first.error).toBeInstanceOf(Abandoned);
    expect(second).toEqual({ error: new Error("second") });
  });
});
