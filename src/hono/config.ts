// Where the middlewares read the variables from: `c.env` whenever it holds them (Worker bindings, or the
// env passed to `app.request(path, init, env)` in a test, in any runtime), else the runtime's environment.
import type { Context } from "hono";
import { getRuntimeKey, env as runtimeEnv } from "hono/adapter";

/** The variables and, for messages, the name of the source they came from. */
export interface Variables {
  vars: Record<string, unknown>;
  source: string;
}

const PREFIX = "UPSTASH_REDIS_REST_";

/** The variables for this request and the source they were read from. */
export function variablesOf(c: Context): Variables {
  const bound = c.env as Record<string, unknown> | undefined;
  if (typeof bound === "object" && bound !== null && Object.keys(bound).some((name) => name.startsWith(PREFIX)))
    return { vars: bound, source: "c.env" };
  const runtime = getRuntimeKey();
  const source =
    runtime === "workerd"
      ? "c.env (the Worker's bindings)"
      : runtime === "node" || runtime === "bun"
        ? `process.env (c.env holds no ${PREFIX}* variable)`
        : runtime === "deno"
          ? `Deno.env (c.env holds no ${PREFIX}* variable)`
          : `the ${runtime} runtime's environment (c.env holds no ${PREFIX}* variable)`;
  return { vars: (runtimeEnv(c) ?? {}) as Record<string, unknown>, source };
}
