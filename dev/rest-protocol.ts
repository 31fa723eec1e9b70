// The Upstash REST protocol's value rules: request arguments in, Redis replies out.

/** Commands the bridge refuses: they block, hold connection state, or change the connection. */
const REFUSED = new Set([
  "blpop",
  "brpop",
  "brpoplpush",
  "blmove",
  "blmpop",
  "bzpopmin",
  "bzpopmax",
  "bzmpop",
  "subscribe",
  "psubscribe",
  "ssubscribe",
  "unsubscribe",
  "punsubscribe",
  "sunsubscribe",
  "monitor",
  "watch",
  "unwatch",
  "multi",
  "exec",
  "discard",
  "select",
  "auth",
  "hello",
  "quit",
  "reset",
  "client",
  "sync",
  "psync",
  "replicaof",
  "slaveof",
  "shutdown",
  "wait",
  "waitaof",
  "debug",
]);

/** A request body that is not a command; answered with HTTP 400. */
export class BadCommand extends Error {}

/** Validates one command array and converts its arguments like `String(x)`. */
export function toCommand(raw: unknown): string[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new BadCommand("ERR a command is a non-empty JSON array");
  const args = raw.map((arg) => {
    const scalar = arg === null || typeof arg === "string" || typeof arg === "number" || typeof arg === "boolean";
    if (scalar) return String(arg);
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

/** An integer reply beyond 2^53, written into the JSON as its exact digits (see {@link toJson}). */
export class BigInteger {
  readonly digits: string;
  constructor(digits: string) {
    this.digits = digits;
  }
}

/**
 * Turns a reply from ioredis' buffer API (with `stringNumbers`, so integers arrive as decimal strings)
 * into JSON values: integers stay numbers (exact digits beyond 2^53), nil is null, bulk and simple
 * strings become strings (base64 at every depth when asked, except a top-level "OK", as Upstash does),
 * arrays recurse.
 */
export function encodeReply(reply: unknown, base64: boolean): unknown {
  if (base64 && Buffer.isBuffer(reply) && reply.length === 2 && reply.toString("latin1") === "OK") return "OK";
  return encodeValue(reply, base64);
}

function encodeValue(reply: unknown, base64: boolean): unknown {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === "number") return reply;
  if (Buffer.isBuffer(reply)) return base64 ? reply.toString("base64") : reply.toString("utf8");
  if (typeof reply === "string" && /^-?\d+$/.test(reply)) return integer(reply);
  if (typeof reply === "string") return base64 ? Buffer.from(reply, "utf8").toString("base64") : reply;
  if (Array.isArray(reply)) return reply.map((item) => encodeValue(item, base64));
  if (typeof reply === "bigint") return integer(String(reply));
  return base64 ? Buffer.from(String(reply), "utf8").toString("base64") : String(reply);
}

function integer(digits: string): number | BigInteger {
  const value = Number(digits);
  return Number.isSafeInteger(value) ? value : new BigInteger(digits);
}

/**
 * JSON.stringify for reply bodies, writing a {@link BigInteger} as its digits.
 * @example
 * toJson({ result: new BigInteger("9007199254740993") }); // '{"result":9007199254740993}'
 */
export function toJson(value: unknown): string {
  if (value instanceof BigInteger) return value.digits;
  if (Array.isArray(value)) return `[${value.map(toJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The text of a Redis error, never encoded. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
