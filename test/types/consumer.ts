// A user's project, type-checked against the built package (dist/*.d.ts) through the package's own
// `exports`: strict, ES2022 + DOM libs only, and skipLibCheck off, so every declaration we ship is checked.
import { Hono } from "hono";
import {
  Redlock,
  LockAcquisitionError,
  checkNodes,
  nodesFromEnv,
  type DoctorReport,
  type Lock,
  type ReleaseResult,
} from "edge-redlock";
import { redlock, type RedlockVariables } from "edge-redlock/hono";

export async function pay(env: Record<string, string>): Promise<number> {
  const lock: Lock = await Redlock.fromEnv(env).acquire(["orders:42"], 10_000, { fencing: true });
  try {
    return lock.expiresAt;
  } finally {
    const done: ReleaseResult = await lock.release();
    await done.pending;
  }
}

export const isBusy = (error: unknown): boolean => error instanceof LockAcquisitionError && error.reason === "held";

export const app = new Hono<{ Variables: RedlockVariables }>().post(
  "/orders/:id/pay",
  redlock((c) => `order:${c.req.param("id")}`, { ttl: 10_000 }),
  (c) => c.json({ until: c.var.lock.expiresAt, lost: c.var.lock.signal.aborted }),
);

/** A Worker's bindings as `wrangler types` declares them: an interface (no index signature) with a non-string binding. */
interface Env {
  UPSTASH_REDIS_REST_URL_1: string;
  UPSTASH_REDIS_REST_TOKEN_1: string;
  RATE_LIMITER: { limit(options: { key: string }): Promise<{ success: boolean }> };
}

export const fromWorkerEnv = (env: Env): Redlock => Redlock.fromEnv(env, { nodes: 1 });

export async function health(env: Env): Promise<Response> {
  const report: DoctorReport = await checkNodes(nodesFromEnv(env, { nodes: 1 }), { samples: 2 });
  return Response.json(report, { status: report.ok ? 200 : 503 });
}

// The mutex alone (edge-redlock/mutex): the same Redlock without the semaphore, read-write lock and inspection;
// the redlock() middleware takes it, the semaphore() and readWrite() middlewares want the Redlock of edge-redlock.
import { Redlock as MutexRedlock, type Lock as MutexLock } from "edge-redlock/mutex";
import { readWrite, semaphore } from "edge-redlock/hono";

const mutex: MutexRedlock = MutexRedlock.fromEnv({});
export const mutexApp = new Hono<{ Variables: RedlockVariables }>().post(
  "/pay",
  redlock("pay", { redlock: mutex }),
  (c) => c.text("ok"),
);
export const anyRedlock: MutexRedlock = Redlock.fromEnv({});
export const sameLock = async (): Promise<MutexLock> => mutex.acquire(["k"], 5_000);
// @ts-expect-error the mutex alone has no semaphore()
mutex.semaphore("uploads", 3);
// @ts-expect-error semaphore() needs the Redlock of edge-redlock
semaphore("uploads", { limit: 3, redlock: mutex });
// @ts-expect-error readWrite() needs the Redlock of edge-redlock
readWrite("doc", { redlock: () => mutex });
