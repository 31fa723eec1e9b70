// Upstash's `allow-key-locking` script flag on top of plain Redis 7, which rejects the flag: the bridge
// runs a flagged script without the flag and with a guard that enforces Upstash's rules for it.
import { createHash } from "node:crypto";
import { KEY_GUARD_PRELUDE, keyGuardPrelude } from "./key-guard-lua.ts";

const FLAG = "allow-key-locking";
const SHEBANG = /^#!lua(?:[ \t]+flags=([^\n]*))?\n/;

/** SHA-1 of a script, as Redis names it for EVALSHA. */
export function sha1(text: string): string {
  return createHash("sha1").update(text, "utf8").digest("hex");
}

/**
 * The script Redis runs for `lua`, or undefined when `lua` does not carry the key-locking flag: the
 * flag goes (other flags stay; the shebang line too when it was the only flag), and the body's first
 * line starts with `prelude` ({@link KEY_GUARD_PRELUDE}), so that line numbers stay the script's own.
 * @example
 * // "local redis = … return redis.call(…)":
 * guarded("#!lua flags=allow-key-locking\nreturn redis.call('GET', KEYS[1])");
 */
export function guarded(lua: string, prelude = KEY_GUARD_PRELUDE): string | undefined {
  const match = SHEBANG.exec(lua);
  if (!match?.[1]) return undefined;
  const flags = match[1].split(",").map((flag) => flag.trim());
  if (!flags.includes(FLAG)) return undefined;
  const rest = flags.filter((flag) => flag !== FLAG && flag !== "");
  const shebang = rest.length === 0 ? "" : `#!lua flags=${rest.join(",")}\n`;
  return `${shebang}${prelude} ${lua.slice(match[0].length)}`;
}

/**
 * Rewrites script commands the way Upstash treats them onto plain Redis. EVAL / SCRIPT LOAD of a
 * flagged script run its {@link guarded} form; EVALSHA and SCRIPT EXISTS of the SHA the client computed
 * name the guarded script's SHA, so they answer from Redis' own script cache: after SCRIPT FLUSH or a
 * restart, EVALSHA answers NOSCRIPT and SCRIPT EXISTS 0, as on Upstash. With `accept` false the
 * commands pass unchanged (Redis then rejects the flag, as a REST proxy in front of plain Redis would).
 */
export class KeyLockingShim {
  accept = true;
  #prelude = KEY_GUARD_PRELUDE;
  /** SHA of a flagged script a client sent → SHA of the guarded script Redis runs (a translation only). */
  readonly #shas = new Map<string, string>();
  /** The reverse, to name the client's SHA in Redis' error texts. */
  readonly #clientShas = new Map<string, string>();

  /** The command to send to Redis instead of `command`. */
  rewrite(command: string[]): string[] {
    if (!this.accept) return command;
    const name = command[0].toLowerCase();
    if ((name === "eval" || name === "eval_ro") && command.length >= 2) {
      return [command[0], this.#register(command[1]), ...command.slice(2)];
    }
    const sub = command[1]?.toLowerCase();
    if (name === "script" && sub === "load" && command.length === 3)
      return [command[0], command[1], this.#register(command[2])];
    if (name === "script" && sub === "exists")
      return [command[0], command[1], ...command.slice(2).map((sha) => this.#runs(sha))];
    if ((name === "evalsha" || name === "evalsha_ro") && command.length >= 2)
      return [command[0], this.#runs(command[1]), ...command.slice(2)];
    return command;
  }

  /**
   * Whether `command` runs a script that carries the key-locking flag (EVAL, SCRIPT LOAD, or EVALSHA of such a script).
   */
  carriesFlag(command: string[]): boolean {
    const name = command[0].toLowerCase();
    if (name === "eval" || name === "eval_ro") return command[1] !== undefined && guarded(command[1]) !== undefined;
    if (name === "script" && command[1]?.toLowerCase() === "load")
      return command[2] !== undefined && guarded(command[2]) !== undefined;
    if (name === "evalsha" || name === "evalsha_ro") return this.#shas.has(command[1]?.toLowerCase() ?? "");
    return false;
  }

  /**
   * Commands a flagged script may not call from now on (upper case; PUBLISH for the `refuseScriptPublish` fault).
   * The translations are forgotten: the next EVALSHA answers NOSCRIPT and the EVAL after it runs the new guard.
   */
  refuse(commands: readonly string[]): void {
    const prelude = keyGuardPrelude(commands);
    if (prelude === this.#prelude) return;
    this.#prelude = prelude;
    this.forget();
  }

  /** Forgets the SHA translations (Redis' script cache decides what exists either way). */
  forget(): void {
    this.#shas.clear();
    this.#clientShas.clear();
  }

  /** The answer to SCRIPT LOAD is the SHA the client computed over what it sent. */
  loadedSha(command: string[]): string | undefined {
    if (!this.accept || command[0].toLowerCase() !== "script" || command[1]?.toLowerCase() !== "load") return undefined;
    return command[2] === undefined ? undefined : sha1(command[2]);
  }

  /** Redis' error text with the guarded script's SHA replaced by the one the client knows. */
  clientText(text: string): string {
    return text.replace(/\b[0-9a-f]{40}\b/g, (sha) => this.#clientShas.get(sha) ?? sha);
  }

  #runs(sha: string): string {
    return this.#shas.get(sha.toLowerCase()) ?? sha;
  }

  #register(lua: string): string {
    const runs = guarded(lua, this.#prelude);
    if (runs === undefined) return lua;
    const [client, redis] = [sha1(lua), sha1(runs)];
    this.#shas.set(client, redis);
    this.#clientShas.set(redis, client);
    return runs;
  }
}
