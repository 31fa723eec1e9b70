// The Lua prelude that makes plain Redis enforce Upstash's `allow-key-locking` rules on a script.
import { DATABASE_WIDE, KEY_SPECS } from "./key-specs.ts";

/** Upstash's words for a key a flagged script names without passing it in KEYS (docs: Key-Based Locking). */
export const DYNAMIC_KEY_ERROR =
  "ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set. Key was: ";

/**
 * What a flagged script that calls FLUSHDB or FLUSHALL gets. Upstash documents the rule ("cannot be
 * called from a script with allow-key-locking") but not its error text: these words are the bridge's.
 */
export function databaseWideError(command: string): string {
  return `ERR ${command} is not allowed in Lua scripts when 'allow-key-locking' flag is set`;
}

/** What a flagged script gets for a command whose key positions the bridge does not know. */
export function unknownCommandError(command: string): string {
  return (
    `ERR the local bridge cannot check the keys of ${command} under 'allow-key-locking' ` +
    "(add it to dev/key-specs.ts)"
  );
}

/**
 * One line of Lua, put before a flagged script's body on the body's first line (line numbers in
 * errors stay those of the script): a local `redis` that shadows the global one, whose `call` and
 * `pcall` refuse an undeclared key or a database-wide command before running it. `call` raises the
 * error as Redis does for a failed command; `pcall` returns it.
 */
export const KEY_GUARD_PRELUDE = keyGuardPrelude();

/**
 * {@link KEY_GUARD_PRELUDE}, refusing also the commands in `refused` as a flagged script's (with
 * {@link databaseWideError}'s words): how the bridge plays a database that takes a command, PUBLISH say, on its
 * own but not from a flagged script.
 */
export function keyGuardPrelude(refused: readonly string[] = []): string {
  const specs = Object.entries(KEY_SPECS)
    .map(([name, spec]) => `[${lua(name)}]={${spec.first},${spec.last},${spec.step},${spec.numkeys ?? 0}}`)
    .join(",");
  const wide = [...DATABASE_WIDE, ...refused].map((name) => `[${lua(name)}]=${lua(databaseWideError(name))}`).join(",");
  const [unknownHead, unknownTail] = unknownCommandError("\0").split("\0");
  return [
    "local redis = (function(real)",
    "local declared = {} for _, key in ipairs(KEYS) do declared[key] = true end",
    `local specs = {${specs}}`,
    `local wide = {${wide}}`,
    "local function refusal(...)",
    "local args, n = {...}, select('#', ...)",
    "if args[1] == nil then return nil end",
    "local name = string.upper(tostring(args[1]))",
    "if wide[name] then return wide[name] end",
    "local spec = specs[name]",
    `if not spec then return ${lua(unknownHead)} .. name .. ${lua(unknownTail)} end`,
    "local function undeclared(i) local key = args[i + 1] if key ~= nil and not declared[tostring(key)] then",
    `return ${lua(DYNAMIC_KEY_ERROR)} .. tostring(key) end end`,
    "if spec[1] > 0 then local last = spec[2] if last < 0 then last = n + last end",
    "for i = spec[1], last, spec[3] do local refused = undeclared(i) if refused then return refused end end end",
    "if spec[4] > 0 then local count = tonumber(args[spec[4] + 1]) or 0",
    "for i = spec[4] + 1, spec[4] + count do local refused = undeclared(i) if refused then return refused end end end",
    "end",
    "return setmetatable({",
    "call = function(...) local refused = refusal(...)",
    "if refused then error({err = refused}) end return real.call(...) end,",
    "pcall = function(...) local refused = refusal(...)",
    "if refused then return {err = refused} end return real.pcall(...) end,",
    "}, {__index = real})",
    "end)(redis);",
  ].join(" ");
}

/** A Lua string literal (the texts here are ASCII; JSON's escapes are valid Lua). */
function lua(text: string): string {
  return JSON.stringify(text);
}
