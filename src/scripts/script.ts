// What a script is: its Lua, the rule that reads its reply, and the helpers around the key-locking flag and EVALSHA.
import { toHex } from "../support/random.ts";
import type { Vote } from "./vote.ts";

/**
 * A Lua script run with EVALSHA (EVAL on a node that does not have it yet), plus the rule that
 * turns its reply into a vote. Anything but the exact success or refusal shape is an error. Every
 * script starts with {@link KEY_LOCKING}, and every key it touches travels in KEYS.
 * @example
 * ```ts
 * import { ACQUIRE } from "edge-redlock/scripts";
 *
 * const vote = ACQUIRE.vote([1]); // { outcome: "granted" }
 * ```
 */
export interface Script {
  /** Which script this is (for failure texts and tallies). */
  readonly name:
    | "acquire"
    | "fair-acquire"
    | "leave"
    | "requeue"
    | "fair-semaphore-acquire"
    | "release"
    | "extend"
    | "fence"
    | "fenced-write"
    | "fenced-read"
    | "semaphore-acquire"
    | "inspect"
    | "rw-read-acquire"
    | "rw-write-acquire"
    | "rw-read-extend"
    | "rw-read-release"
    | "rw-inspect";
  /** The Lua source, starting with the key-locking shebang. */
  readonly lua: string;
  /** Turns a reply into a vote; anything but the exact success or refusal shape is an error vote. */
  vote(reply: unknown): Vote;
}

/**
 * A script as it is written: its Lua behind a function, built on first use and kept. Each script is
 * defined with a pure call, so a bundler drops the scripts of features a user does not import (the Lua
 * is most of their size; a template literal at module level would keep them all).
 */
export function defineScript(source: Omit<Script, "lua"> & { lua: () => string }): Script {
  let lua: string | undefined;
  return {
    name: source.name,
    get lua() {
      lua ??= source.lua();
      return lua;
    },
    vote: source.vote,
  };
}

/**
 * The shebang that lets Upstash lock only the keys in KEYS while the script runs, instead of the whole
 * database (Upstash docs: "Key-Based Locking"). Plain Redis 7 rejects the flag; see {@link withoutKeyLocking}.
 */
export const KEY_LOCKING = "#!lua flags=allow-key-locking\n";

const KEY_LOCKING_FLAG = "allow-key-locking";
const SHEBANG = /^#!lua(?:[ \t]+flags=([^\n]*))?\n/;

/**
 * The script without the key-locking flag, for a node that rejects it (plain Redis 7 behind a REST
 * proxy): other flags stay; the shebang line goes when that flag was its only one.
 * @example
 * ```ts
 * import { ACQUIRE } from "edge-redlock/scripts";
 *
 * withoutKeyLocking(ACQUIRE.lua).startsWith("#!lua"); // false
 * ```
 */
export function withoutKeyLocking(lua: string): string {
  let plain = withoutFlag.get(lua);
  if (plain === undefined) {
    plain = stripKeyLocking(lua);
    withoutFlag.set(lua, plain);
  }
  return plain;
}

/** The flagless source of each script, computed once (a node that rejects the flag asks for it every request). */
const withoutFlag = new Map<string, string>();

function stripKeyLocking(lua: string): string {
  const match = SHEBANG.exec(lua);
  if (!match?.[1]) return lua;
  const flags = match[1].split(",").map((flag) => flag.trim());
  if (!flags.includes(KEY_LOCKING_FLAG)) return lua;
  const rest = flags.filter((flag) => flag !== KEY_LOCKING_FLAG && flag !== "");
  const body = lua.slice(match[0].length);
  return rest.length === 0 ? body : `#!lua flags=${rest.join(",")}\n${body}`;
}

/**
 * Whether a node's error text (the database's words, without the command `@upstash/redis` appends) says
 * it does not accept the key-locking flag (Redis 7: `ERR Unexpected flag in script shebang: allow-key-locking`).
 * @example
 * ```ts
 * rejectsKeyLocking("ERR Unexpected flag in script shebang: allow-key-locking"); // true
 * ```
 */
export function rejectsKeyLocking(text: string): boolean {
  return /^ERR Unexpected flag in script shebang: /i.test(text) && text.includes(KEY_LOCKING_FLAG);
}

const shas = new Map<string, Promise<string>>();

/**
 * The SHA-1 of a script's source, as EVALSHA wants it, from Web Crypto (computed once per source).
 * @example
 * ```ts
 * import { ACQUIRE } from "edge-redlock/scripts";
 *
 * await redis.evalsha(await scriptSha(ACQUIRE.lua), ["orders:42"], [value, "10000"]);
 * ```
 */
export function scriptSha(lua: string): Promise<string> {
  let sha = shas.get(lua);
  if (!sha) {
    sha = crypto.subtle.digest("SHA-1", new TextEncoder().encode(lua)).then((digest) => toHex(new Uint8Array(digest)));
    shas.set(lua, sha);
  }
  return sha;
}
