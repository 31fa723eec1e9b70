// A waiter in a process of its own whose event loop stalls for 1.5 s while its first round is out (a busy loop), as a
// frozen container or a long synchronous task would. It joins the line for "res" (nodes from argv[2] as JSON) and
// writes "waiting" once the stall is over and it waits in line; the test then kills it.
import { Redlock, upstashNode, type RedlockNode } from "../../../src/index.ts";

const spec: { url: string; token: string }[] = JSON.parse(process.argv[2]);
let stalled = false;
const nodes: RedlockNode[] = spec.map((s, i) => {
  const node = upstashNode({ url: s.url, token: s.token, label: `stalling-${i}` });
  return {
    ...node,
    run(script, keys, args, signal) {
      const reply = node.run(script, keys, args, signal);
      if (!stalled) {
        stalled = true;
        const until = Date.now() + 1_500;
        while (Date.now() < until) {} // the stall: nothing else runs
      }
      return reply;
    },
  };
});
const redlock = new Redlock(nodes, { warnings: false });
redlock.acquire("res", 5_000, { maxWait: 30_000 }).catch(() => undefined);
setTimeout(() => process.stdout.write("waiting\n"), 2_500);
