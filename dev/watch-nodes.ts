// The demo's local nodes, watched: one line when they stop answering and one when they are back, instead
// of a 503 per request with no word why (workerd's own output stays in the demo's log).
import { checkLocalNodes } from "../src/doctor/running.ts";

/**
 * Checks the nodes named by `vars` every `everyMs` and calls `say` with one line each time the answer
 * changes (down, then back); the returned function stops the watch.
 * @example
 * const unwatch = watchNodes(vars, (line) => process.stderr.write(`${line}\n`));
 */
export function watchNodes(vars: Record<string, string>, say: (line: string) => void, everyMs = 2_000): () => void {
  let down = false;
  let stopped = false;
  const tick = async () => {
    const failure = await checkLocalNodes(vars, { source: "npm start's local nodes", timeoutMs: everyMs }).then(
      () => undefined,
      (error: Error) => error.message,
    );
    if (stopped) return;
    if (failure !== undefined && !down)
      say(failure.replace("Start them in another terminal: npx edge-redlock dev", "Restart npm start."));
    if (failure === undefined && down) say("edge-redlock: the local nodes answer again");
    down = failure !== undefined;
    timer = setTimeout(tick, everyMs);
  };
  let timer = setTimeout(tick, everyMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
