// A TCP proxy in front of one redis-server with the bridge's latency and hang controls, so TCP
// clients (node-redlock over ioredis) suffer the same faults as the HTTP ones.
import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { delays, type LatencySpread } from "./latency-spread.ts";

/** Faults the proxy applies to client→server traffic. */
export interface ProxyFaults {
  latencyMs: number;
  /**
   * Jitter and retransmits per chunk, as on the bridge (a stalled chunk holds back the ones behind it, as TCP does).
   */
  spread: LatencySpread | null;
  hang: boolean;
}

/** Forwards 127.0.0.1:port → the redis port; each chunk from a client is delayed or held per the faults. */
export class TcpProxy {
  readonly target: number;
  faults: ProxyFaults = { latencyMs: 0, spread: null, hang: false };
  #delay = delays(null);
  #server: Server;
  #port = 0;
  #sockets = new Set<Socket>();
  #held: (() => void)[] = [];

  constructor(targetPort: number) {
    this.target = targetPort;
    this.#server = createServer((client) => this.#pipe(client));
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.#port}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(0, "127.0.0.1", () => resolve());
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  setFaults(patch: Partial<ProxyFaults>): void {
    if (patch.spread !== undefined && patch.spread !== this.faults.spread) this.#delay = delays(patch.spread);
    this.faults = { ...this.faults, ...patch };
    if (!this.faults.hang) {
      const held = this.#held;
      this.#held = [];
      for (const release of held) release();
    }
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #pipe(client: Socket): void {
    const server = connect(this.target, "127.0.0.1");
    this.#sockets.add(client);
    this.#sockets.add(server);
    client.setNoDelay(true);
    server.setNoDelay(true);
    // Chunks keep their order: each waits for the one before it, then for its own delay.
    let previous = Promise.resolve();
    client.on("data", (chunk) => {
      const arrived = Date.now();
      const { hang } = this.faults;
      const latencyMs = this.faults.latencyMs > 0 || this.faults.spread ? this.#delay(this.faults.latencyMs) : 0;
      previous = previous.then(async () => {
        // Held if it arrived during a hang that still lasts when its turn comes (a chunk queued behind a
        // held one must not be held again after the hang was cleared).
        if (hang && this.faults.hang) await new Promise<void>((resolve) => this.#held.push(resolve));
        const wait = arrived + latencyMs - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (!server.destroyed) server.write(chunk);
      });
    });
    server.on("data", (chunk) => client.write(chunk));
    const close = () => {
      client.destroy();
      server.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(server);
    };
    client.on("close", close);
    server.on("close", close);
    client.on("error", close);
    server.on("error", close);
  }
}
