// One node behind the REST bridge, on either backend, for the pub/sub tests: a real redis-server (the
// cluster of dev/cluster.ts) or a memory node whose emulated script publishes, as a Lua script does.
import { randomBytes } from "node:crypto";
import type { Redis } from "@upstash/redis";
import { nodeAdmin } from "../../../dev/admin.ts";
import { Bridge } from "../../../dev/bridge.ts";
import { startCluster } from "../../../dev/cluster.ts";
import { MemoryBackend } from "../../../dev/memory-backend.ts";
import { MemoryNode } from "../../../src/memory/memory-node.ts";

export type BackendKind = "redis" | "memory";

/** A script that publishes ARGV[1] on the channel KEYS[1] and returns PUBLISH's count. */
export const WAKE_SCRIPT = { name: "wake", lua: "return redis.call('PUBLISH', KEYS[1], ARGV[1])" };

/** A memory node that runs {@link WAKE_SCRIPT} as redis-server would: its PUBLISH from inside the script. */
class PublishingNode extends MemoryNode {
  protected override execute(name: string, keys: string[], args: string[]): unknown {
    if (name === WAKE_SCRIPT.name) return this.publish(keys[0], args[0]);
    return super.execute(name, keys, args);
  }
}

export interface PubSubNode {
  url: string;
  token: string;
  adminUrl: string;
  admin: ReturnType<typeof nodeAdmin>;
  bridge: Bridge;
  stop(): Promise<void>;
}

/** Starts one node of `kind` behind its bridge; `admin.restart()` empties it and drops its connections. */
export async function startPubSubNode(kind: BackendKind): Promise<PubSubNode> {
  if (kind === "redis") {
    const cluster = await startCluster({ nodes: 1 });
    const [node] = cluster.nodes;
    const { url, token, adminUrl } = node;
    return { url, token, adminUrl, admin: nodeAdmin(adminUrl), bridge: cluster.bridges[0], stop: cluster.stop };
  }
  const token = randomBytes(18).toString("base64url");
  const backend = new MemoryBackend("memory-1", { node: new PublishingNode("memory-1"), scripts: [WAKE_SCRIPT] });
  const bridge = new Bridge({ backend, token });
  bridge.onAdmin = async (action) => (action === "restart" ? backend.restart() : { state: "memory" });
  await bridge.start();
  const adminUrl = bridge.adminUrl;
  return { url: bridge.url, token, adminUrl, admin: nodeAdmin(adminUrl), bridge, stop: () => bridge.stop() };
}

/** Waits until `ready` holds, checking every 5 ms, at most `timeoutMs` (then throws). */
export async function until(ready: () => boolean | Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A `/subscribe` stream read with plain fetch: everything received so far, and how it ended. */
export interface RawStream {
  response: Response;
  /** The body's text so far. */
  readonly text: string;
  /** "open", "done" (the body ended properly) or the error its read failed with. */
  readonly ended: "open" | "done" | Error;
  close(): void;
}

/** POSTs to `/subscribe/<path>` and reads the stream in the background. */
export async function rawStream(
  node: { url: string; token: string },
  path: string,
  headers: Record<string, string> = {},
): Promise<RawStream> {
  const controller = new AbortController();
  const response = await fetch(`${node.url}/subscribe/${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${node.token}`, accept: "text/event-stream", ...headers },
    body: "[]",
    signal: controller.signal,
  });
  let text = "";
  let ended: RawStream["ended"] = "open";
  if (response.body) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            ended = "done";
            return;
          }
          text += decoder.decode(value, { stream: true });
        }
      } catch (error) {
        ended = error as Error;
      }
    })();
  }
  return {
    response,
    get text() {
      return text;
    },
    get ended() {
      return ended;
    },
    close: () => controller.abort(),
  };
}

/** What a `Subscriber` of @upstash/redis reported, in order. */
export interface Heard {
  subscribed: number[];
  messages: { channel: string; message: unknown }[];
  errors: unknown[];
}

/** Records a subscriber's `subscribe`, `message` and `error` events. */
export function listen(subscriber: ReturnType<Redis["subscribe"]>): Heard {
  const heard: Heard = { subscribed: [], messages: [], errors: [] };
  subscriber.on("subscribe", (count) => void heard.subscribed.push(count));
  subscriber.on("message", (data) => void heard.messages.push(data));
  subscriber.on("error", (error) => void heard.errors.push(error));
  return heard;
}
