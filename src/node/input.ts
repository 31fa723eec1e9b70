// What users hand to `new Redlock`, turned into nodes: configs are checked and built, clients wrapped.
import { checkToken, checkUrl } from "../check.ts";
import { InvalidArgumentError } from "../errors.ts";
import { envNames } from "./env.ts";
import type { NodeConfig, RedlockNode, ScriptClient } from "./node.ts";
import { upstashNode } from "./upstash.ts";
import { warnOnFailure } from "./degradation-warning.ts";

/** One database: `{ url, token }`, an `@upstash/redis` `Redis` instance, or a custom {@link RedlockNode}. */
export type NodeInput = NodeConfig | ScriptClient | RedlockNode;

/**
 * The nodes of a `Redlock`, and the tokens to keep out of every failure text. The same database may not
 * be given twice (under any spelling of its URL).
 * @example
 * ```ts
 * const { built, secrets } = toNodes([{ url, token }], true);
 * ```
 */
export function toNodes(
  nodes: readonly NodeInput[],
  batching: boolean,
  warnings = false,
): { built: RedlockNode[]; secrets: string[] } {
  if (!Array.isArray(nodes) || nodes.length === 0)
    throw new InvalidArgumentError("nodes", "must hold at least one node");
  const identities = new Set<string>();
  const secrets: string[] = [];
  const built = Array.from({ length: nodes.length }, (_, i) => {
    const node: unknown = nodes[i];
    if (typeof node !== "object" || node === null)
      throw new InvalidArgumentError(`nodes[${i}]`, "must be { url, token }, a Redis instance or a RedlockNode");
    if (typeof (node as RedlockNode).run === "function") return node as RedlockNode;
    const warned = (built: RedlockNode) => (warnings ? warnOnFailure(built, secrets) : built);
    if (typeof (node as ScriptClient).evalsha === "function")
      return warned(upstashNode(node as ScriptClient, `node ${i + 1}`));
    const { url, label } = node as NodeConfig;
    // Nodes read by nodesFromEnv are labelled by their variable: its errors name the variables the user set.
    const fromEnv = typeof label === "string" ? /^UPSTASH_REDIS_REST_URL_(\d+)$/.exec(label) : null;
    const urlName = fromEnv ? fromEnv[0] : `nodes[${i}].url`;
    const identity = checkUrl(url, urlName);
    const token = checkToken(
      (node as NodeConfig).token,
      fromEnv ? envNames(Number(fromEnv[1])).token : `nodes[${i}].token`,
    );
    if (identities.has(identity))
      throw new InvalidArgumentError(urlName, "repeats another node: the databases must be independent");
    identities.add(identity);
    secrets.push(token);
    if (label !== undefined && (typeof label !== "string" || label === ""))
      throw new InvalidArgumentError(`nodes[${i}].label`, "must be a non-empty string");
    return warned(
      upstashNode({ url, token }, { batching, label: `${label ?? `node ${i + 1}`} (${new URL(url).host})` }),
    );
  });
  return { built, secrets };
}
