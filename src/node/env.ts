// Node settings from environment variables or Worker bindings.
import { InvalidArgumentError } from "../errors.ts";
import type { NodeConfig } from "./node.ts";

/** Options of {@link nodesFromEnv}. */
export interface EnvOptions {
  /** How many databases to read (default 5). */
  nodes?: number;
}

/**
 * The variable names for database `n` (1-based).
 * @example
 * ```ts
 * envNames(2); // { url: "UPSTASH_REDIS_REST_URL_2", token: "UPSTASH_REDIS_REST_TOKEN_2" }
 * ```
 */
export const envNames = (n: number): { url: string; token: string } => ({
  url: `UPSTASH_REDIS_REST_URL_${n}`,
  token: `UPSTASH_REDIS_REST_TOKEN_${n}`,
});

/** Where the variables come from, by runtime: the one thing a reader of the error must change. */
const WHERE_TO_SET =
  "on Workers, set them in .dev.vars locally and with `npx wrangler secret put NAME` when deployed; elsewhere, in " +
  "the environment (locally, `npx edge-redlock dev` runs local nodes and writes their variables to .dev.vars, or " +
  "to .env with --out .env)";

/**
 * Configuration is missing from the environment; `missing` lists the variable names (never values).
 * @example
 * ```ts
 * try { nodesFromEnv(env); }
 * catch (e) { if (e instanceof MissingConfigurationError) console.error("set", e.missing.join(", ")); }
 * ```
 */
export class MissingConfigurationError extends InvalidArgumentError {
  /** The names of the missing variables (never their values). */
  readonly missing: string[];
  /**
   * An error listing the missing variables.
   * @param missing the names of the missing variables
   */
  constructor(missing: string[]) {
    super("env", `is missing ${missing.join(", ")}: ${WHERE_TO_SET}`);
    this.missing = missing;
  }
}

/**
 * Reads `UPSTASH_REDIS_REST_URL_1` … `_N` and `UPSTASH_REDIS_REST_TOKEN_1` … `_N` from any object:
 * a Worker's `env` (its `interface Env`, other bindings included), Node's or Bun's environment object,
 * `Deno.env.toObject()`.
 * Typed as `object` because an interface has no index signature; only those entries are read, and each
 * must be a non-empty string, else {@link MissingConfigurationError} names it.
 * @example
 * ```ts
 * const nodes = nodesFromEnv(env); // Worker bindings, Node's env object or Deno.env.toObject()
 * ```
 */
export function nodesFromEnv(env: object, options: EnvOptions = {}): NodeConfig[] {
  if (typeof env !== "object" || env === null) throw new InvalidArgumentError("env", "must be an object of variables");
  const vars = env as Record<string, unknown>;
  const count = options.nodes ?? 5;
  if (!Number.isInteger(count) || count < 1)
    throw new InvalidArgumentError("options.nodes", "must be a positive integer");
  const missing: string[] = [];
  const nodes: NodeConfig[] = [];
  for (let n = 1; n <= count; n++) {
    const names = envNames(n);
    const url = vars[names.url];
    const token = vars[names.token];
    if (typeof url !== "string" || url === "") missing.push(names.url);
    if (typeof token !== "string" || token === "") missing.push(names.token);
    nodes.push({ url: url as string, token: token as string, label: names.url });
  }
  if (missing.length > 0) throw new MissingConfigurationError(missing);
  return nodes;
}
