// Upstash's `allow-key-locking` script flag on top of plain Redis 7, which rejects it.
import { createHash } from "node:crypto";
import { withoutKeyLocking } from "../src/scripts/index.ts";

/** SHA-1 of a script, as Redis names it for EVALSHA. */
export function sha1(text: string): string {
  return createHash("sha1").update(text, "utf8").digest("hex");
}

/**
 * Rewrites script commands the way Upstash sees them onto plain Redis: EVAL / SCRIPT LOAD of a script
 * with the key-locking flag run the script without it, and EVALSHA of the flagged script's SHA runs
 * the stripped one. With `accept` false the commands pass unchanged (Redis then rejects the flag, as a
 * REST proxy in front of plain Redis would).
 */
export class KeyLockingShim {
  accept = true;
  /** SHA of the script a client sent → SHA of the script Redis runs. */
  readonly #shas = new Map<string, string>();

  /** The command to send to Redis instead of `command`. */
  rewrite(command: string[]): string[] {
    if (!this.accept) return command;
    const name = command[0].toLowerCase();
    if ((name === "eval" || name === "eval_ro") && command.length >= 2) {
      return [command[0], this.#register(command[1]), ...command.slice(2)];
    }
    if (name === "script" && command[1]?.toLowerCase() === "load" && command.length === 3) {
      return [command[0], command[1], this.#register(command[2])];
    }
    if ((name === "evalsha" || name === "evalsha_ro") && command.length >= 2) {
      const mapped = this.#shas.get(command[1].toLowerCase());
      return mapped ? [command[0], mapped, ...command.slice(2)] : command;
    }
    return command;
  }

  /** Whether `command` runs a script that carries the key-locking flag (EVAL, SCRIPT LOAD, or EVALSHA of such a script). */
  carriesFlag(command: string[]): boolean {
    const name = command[0].toLowerCase();
    if (name === "eval" || name === "eval_ro") return command[1] !== undefined && withoutKeyLocking(command[1]) !== command[1];
    if (name === "script" && command[1]?.toLowerCase() === "load") return command[2] !== undefined && withoutKeyLocking(command[2]) !== command[2];
    if (name === "evalsha" || name === "evalsha_ro") return this.#shas.has(command[1]?.toLowerCase() ?? "");
    return false;
  }

  /** Forgets the scripts seen (as a SCRIPT FLUSH does on Redis). */
  forget(): void {
    this.#shas.clear();
  }

  /** The answer to SCRIPT LOAD is the SHA the client computed over what it sent. */
  loadedSha(command: string[]): string | undefined {
    if (!this.accept || command[0].toLowerCase() !== "script" || command[1]?.toLowerCase() !== "load") return undefined;
    return command[2] === undefined ? undefined : sha1(command[2]);
  }

  #register(lua: string): string {
    const stripped = withoutKeyLocking(lua);
    if (stripped !== lua) this.#shas.set(sha1(lua), sha1(stripped));
    return stripped;
  }
}
