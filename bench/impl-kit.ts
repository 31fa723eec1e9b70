// The shape every implementation under test takes, and the quorum decision and retry loop the
// non-library implementations share.

export interface Held {
  release(): Promise<unknown>;
  /** How many attempts the acquisition took, where the implementation says. */
  attempts?: number;
}

/** One implementation under test. `acquire` resolves with a handle, or rejects when not acquired. */
export interface Impl {
  name: string;
  /** Speaks RESP over TCP (through the proxies): no HTTP requests to count. */
  tcp?: boolean;
  acquire(key: string, ttl: number, options?: { wait?: number }): Promise<Held>;
  close(): Promise<void>;
}

export interface ImplOptions {
  nodeTimeout: number;
  retryDelay: number;
  retryJitter: number;
}

/** Resolves once `quorum` grants are in; once that cannot happen any more, starts `undo` and rejects. */
export function decide(grants: Promise<boolean>[], quorum: number, undo: () => unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    let yes = 0;
    let no = 0;
    for (const grant of grants) {
      void grant.then((granted) => {
        if (granted) yes++;
        else no++;
        if (yes === quorum) resolve();
        if (no === grants.length - quorum + 1) {
          void undo();
          reject(new Error("not acquired"));
        }
      });
    }
  });
}

/** Tries `attempt` until it succeeds or the next try would start after `wait` ms, sleeping retryDelay ± retryJitter. */
export async function retryFor(wait: number, options: ImplOptions, attempt: () => Promise<Held>): Promise<Held> {
  const deadline = performance.now() + wait;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const delay = options.retryDelay + (Math.random() * 2 - 1) * options.retryJitter;
      if (performance.now() + delay > deadline) throw error;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
