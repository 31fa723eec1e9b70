// A response body watched to its end, so a lock guarding a streamed response outlives the stream.

/** How much of a body is read ahead of the client, produced but not yet sent (bytes). */
const READ_AHEAD_BYTES = 1 << 20;

/** A response whose body is watched, and when that body ended. */
export interface WatchedBody {
  response: Response;
  /**
   * Resolves once the handler's stream is over: ended, failed, or cancelled (and its cancel settled). Never
   * rejects.
   */
  ended: Promise<void>;
}

/** What to do on the way. */
export interface WatchOptions {
  /** When it aborts before the body ended, the body is cut with its reason and the handler's stream cancelled. */
  lost: AbortSignal;
  /** Called at once when the client cancels the body (or it is abandoned), before anything else happens. */
  onAbandon(): void;
  /** How long the handler's stream may run on after the client left before it is cancelled (ms). */
  graceMs: number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Passes `response`'s body through a stream that reads the handler's body ahead of the client (up to
 * {@link READ_AHEAD_BYTES}, so a body nobody reads still ends once it is produced), and tells when the
 * handler's stream is over.
 * - Client cancels: `onAbandon` runs at once; the handler's stream is read on (and dropped) until it
 *   ends, for at most `graceMs`; then it is cancelled, and `ended` waits for that cancel to settle. The
 *   handler's code may still be running after the client left: the lock must cover it.
 * - `lost` aborts: the body is cut with its reason (a client must not take half an answer for a whole
 *   one) and the handler's stream cancelled.
 */
export function watchBody(response: Response, options: WatchOptions): WatchedBody {
  const source = response.body;
  if (source === null || source.locked) return { response, ended: Promise.resolve() };
  const { lost } = options;
  const reader = source.getReader();
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => (end = resolve));
  let over = false; // the client no longer reads: cancelled, cut, or ended
  const finish = () => {
    lost.removeEventListener("abort", cut);
    end();
  };
  let cut = () => {};
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        cut = () => {
          if (!over) controller.error(lost.reason);
          over = true;
          reader.cancel(lost.reason).then(finish, finish);
        };
        if (lost.aborted) cut();
        else lost.addEventListener("abort", cut, { once: true });
      },
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (over) return; // abandoned or cut meanwhile: that path finishes
          if (chunk.done) {
            over = true;
            controller.close();
            finish();
          } else controller.enqueue(chunk.value);
        } catch (error) {
          if (over) return;
          over = true;
          controller.error(error);
          finish();
        }
      },
      cancel(reason) {
        if (over) return;
        over = true;
        options.onAbandon();
        void runOut(reader, reason, options).then(finish, finish);
      },
    },
    { highWaterMark: READ_AHEAD_BYTES, size: (chunk) => chunk?.byteLength ?? 1 },
  );
  return { response: copyResponse(body, response), ended };
}

/** Reads the handler's stream to its end, dropping what it writes; cancels it after `graceMs` or when `lost` aborts. */
async function runOut(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  reason: unknown,
  options: WatchOptions,
): Promise<void> {
  const stop = new AbortController();
  const deadline = options.sleep(options.graceMs, stop.signal).then(
    () => "late" as const,
    () => "ended" as const,
  );
  const lost = new Promise<"lost">((resolve) => {
    if (options.lost.aborted) resolve("lost");
    else options.lost.addEventListener("abort", () => resolve("lost"), { once: true });
  });
  const drained = (async () => {
    for (;;) if ((await reader.read()).done) return "ended" as const;
  })().catch(() => "ended" as const);
  const outcome = await Promise.race([drained, deadline, lost]);
  stop.abort();
  if (outcome !== "ended") await reader.cancel(reason).catch(() => {});
}

/**
 * `response` with another body. A status text that is not a byte string (a proxied reply) is left out rather than
 * failing.
 */
function copyResponse(body: ReadableStream<Uint8Array>, response: Response): Response {
  try {
    return new Response(body, response);
  } catch {
    return new Response(body, { status: response.status, headers: response.headers });
  }
}
