// The Upstash REST protocol's value rules: request arguments in, Redis replies out.

/** Commands the bridge refuses: they block, hold connection state, or change the connection. */
const REFUSED = new Set([
  "blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax", "bzmpop",
  "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor",
  "watch", "unwatch", "multi", "exec", "discard", "select", "auth", "hello", "quit", "reset", "client",
  "sync", "psync", "replicaof", "slaveof", "shutdown", "wait", "waitaof", "debug",
]);

/** A request body that is not a command; answered with HTTP 400. */
export class BadCommand extends Error {}

/** Validates one command array and converts its arguments like `String(x)`. */
export function toCommand(raw: unknown): string[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new BadCommand("ERR a command is a non-empty JSON array");
  const args = raw.map((arg) => {
    if (arg === null || typeof arg === "string" || typeof arg === "number" || typeof arg === "boolean") return String(arg);
    throw new BadCommand("ERR command arguments must be strings, numbers, booleans or null");
  });
  const name = args[0].toLowerCase();
  if (REFUSED.has(name)) throw new BadCommand(`ERR command '${name}' is not allowed over REST`);
  if ((name === "xread" || name === "xreadgroup") && args.some((a) => a.toLowerCase() === "block")) {
    throw new BadCommand(`ERR blocking ${name} is not allowed over REST`);
  }
  return args;
}

/** Validates a pipeline or transaction body: an array of commands. */
export function toCommands(raw: unknown): string[][] {
  if (!Array.isArray(raw) || raw.length === 0) throw new BadCommand("ERR a pipeline is a non-empty array of commands");
  return raw.map(toCommand);
}

/**
 * Turns a reply from ioredis' buffer API into JSON: integers stay numbers, nil is null,
 * bulk and simple strings become strings (base64 at every depth when asked), arrays recurse.
 */
export function encodeReply(reply: unknown, base64: boolean): unknown {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === "number") return reply;
  if (Buffer.isBuffer(reply)) return base64 ? reply.toString("base64") : reply.toString("utf8");
  if (typeof reply === "string") return base64 ? Buffer.from(reply, "utf8").toString("base64") : reply;
  if (Array.isArray(reply)) return reply.map((item) => encodeReply(item, base64));
  if (typeof reply === "bigint") return Number(reply);
  return base64 ? Buffer.from(String(reply), "utf8").toString("base64") : String(reply);
}

/** The text of a Redis error, never encoded. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
