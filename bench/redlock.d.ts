// Types for node-redlock 5.0.0-beta.2, whose package.json "exports" hides its own .d.ts.
declare module "redlock" {
  import type { EventEmitter } from "node:events";
  export interface RedlockLock {
    release(): Promise<unknown>;
  }
  export default class Redlock extends EventEmitter {
    constructor(clients: Iterable<unknown>, settings?: Record<string, unknown>);
    acquire(resources: string[], duration: number, settings?: Record<string, unknown>): Promise<RedlockLock>;
  }
}
