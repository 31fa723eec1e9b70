// Pub/Sub over Upstash REST: a server-sent event stream per channel (`POST /subscribe/<channel>`), read with
// fetch under the caller's signal, so a stream that ends is known and one that never confirms is cut.

/**
 * A live subscription to one channel of one node.
 * @example
 * ```ts
 * import { upstashNode } from "edge-redlock";
 *
 * const node = upstashNode({ url, token });
 * const subscription = await node.subscribe?.("news", (payload) => console.log(payload), signal);
 * await subscription?.closed; // the stream ended: cut, aborted, or the node went away
 * ```
 */
export interface Subscription {
  /** Resolves when the stream has ended: cut, aborted, or the node went away. Never rejects. */
  readonly closed: Promise<void>;
}

/** One SSE `data:` line of Upstash's Pub/Sub stream, as `kind,channel,payload`. */
function parseEvent(data: string): { kind: string; channel: string; payload: string } | undefined {
  const first = data.indexOf(",");
  const second = first < 0 ? -1 : data.indexOf(",", first + 1);
  if (second < 0) return undefined;
  return { kind: data.slice(0, first), channel: data.slice(first + 1, second), payload: data.slice(second + 1) };
}

/**
 * Subscribes to `channel` on the REST endpoint `url` with `token`, calling `onMessage` with each message's payload
 * (as published: the library's payloads hold no comma or newline). Resolves once the node confirmed
 * (`subscribe,<channel>,1`); rejects when it answered an error status or the stream ended first. Aborting `signal`
 * ends the stream, confirmed or not: the caller bounds the confirmation (a node that never sends headers would hold
 * one of a Worker's six connection slots).
 */
export async function sseSubscribe(
  url: string,
  token: string,
  channel: string,
  onMessage: (payload: string) => void,
  signal: AbortSignal,
): Promise<Subscription> {
  signal.throwIfAborted();
  const stream = new AbortController();
  const stop = () => stream.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  let confirm!: () => void;
  let refuse!: (error: unknown) => void;
  const confirmed = new Promise<void>((resolve, reject) => {
    confirm = resolve;
    refuse = reject;
  });
  const closed = (async () => {
    try {
      const response = await fetch(`${url.replace(/\/$/, "")}/subscribe/${channel}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, Accept: "text/event-stream" },
        signal: stream.signal,
      });
      if (!response.ok || !response.body) {
        await response.body?.cancel().catch(() => {});
        throw new Error(`subscribe answered HTTP ${response.status}`);
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end = buffer.indexOf("\n");
        while (end >= 0) {
          const line = buffer.slice(0, end).replace(/\r$/, "");
          buffer = buffer.slice(end + 1);
          end = buffer.indexOf("\n");
          if (!line.startsWith("data:")) continue;
          const event = parseEvent(line.slice(5).trimStart());
          if (event?.kind === "subscribe") confirm();
          else if (event?.kind === "message") onMessage(event.payload);
        }
        // A stream that sends no line end for this long is not the library's (payloads are a few dozen bytes).
        if (buffer.length > 65_536) throw new Error("subscription sent an over-long line");
      }
      throw new Error("subscription stream ended");
    } catch (error) {
      refuse(signal.aborted ? signal.reason : error);
    } finally {
      signal.removeEventListener("abort", stop);
    }
  })();
  await confirmed;
  return { closed };
}
