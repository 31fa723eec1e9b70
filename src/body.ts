// A response body watched to its end, so a lock guarding a streamed response outlives the stream.

/** How much of a body is read ahead of the client, produced but not yet sent (bytes). */
export const READ_AHEAD_BYTES = 1 << 20;

/** A response whose body is watched, and when that body ended. */
export interface WatchedBody {
  response: Response;
  /** Resolves once the handler's body is finished: read to its end, failed, or cancelled. Never rejects. */
  ended: Promise<void>;
}

/**
 * Passes `response`'s body through a stream that reads the handler's body ahead of the client (up to
 * {@link READ_AHEAD_BYTES}, so a body nobody reads still ends once it is produced), and tells when it
 * ended. When `lost` aborts before, the body is cut with `lost.reason` and the handler's stream is
 * cancelled: a client must not take a half-written answer for a whole one.
 * @example
 * const { response, ended } = watchBody(c.res, keeper.signal);
 * c.res = response;
 * ctx.waitUntil(ended.then(() => lock.release()));
 */
export function watchBody(response: Response, lost: AbortSignal): WatchedBody {
  const source = response.body;
  if (source === null || source.locked) return { response, ended: Promise.resolve() };
  const reader = source.getReader();
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => (end = resolve));
  let cut: () => void = () => {};
  const finish = () => {
    lost.removeEventListener("abort", cut);
    end();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        cut = () => {
          controller.error(lost.reason);
          reader.cancel(lost.reason).catch(() => {});
          finish();
        };
        if (lost.aborted) cut();
        else lost.addEventListener("abort", cut, { once: true });
      },
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (chunk.done) {
            controller.close();
            finish();
          } else controller.enqueue(chunk.value);
        } catch (error) {
          controller.error(error);
          finish();
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: READ_AHEAD_BYTES, size: (chunk) => chunk?.byteLength ?? 1 },
  );
  return { response: new Response(body, response), ended };
}
