// Where each Redis command keeps its key names: what the bridge checks key sizes on, and what a
// script flagged `allow-key-locking` may name only from its KEYS.

/**
 * The key arguments of one command, by 1-based position after the command name: `first` to `last`
 * (negative: counted from the end, -1 the last argument) every `step`; `first` 0 means none. With
 * `numkeys`, the argument at that position counts further keys that follow it.
 */
export interface KeySpec {
  first: number;
  last: number;
  step: number;
  numkeys?: number;
}

const ONE: KeySpec = { first: 1, last: 1, step: 1 };
const ALL: KeySpec = { first: 1, last: -1, step: 1 };
const TWO: KeySpec = { first: 1, last: 2, step: 1 };
const NONE: KeySpec = { first: 0, last: 0, step: 1 };

const ONE_KEY = `GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN INCR INCRBY INCRBYFLOAT DECR DECRBY
GETRANGE SUBSTR SETRANGE PTTL TTL EXPIRE PEXPIRE EXPIREAT PEXPIREAT EXPIRETIME PEXPIRETIME PERSIST TYPE DUMP RESTORE
SORT SORT_RO HSET HSETNX HGET HMGET HMSET HDEL HGETALL HKEYS HVALS HLEN HEXISTS HINCRBY HINCRBYFLOAT HSTRLEN
HRANDFIELD HSCAN LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM LINSERT LPOS SADD SREM
SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SSCAN ZADD ZREM ZSCORE ZMSCORE ZINCRBY ZCARD ZCOUNT ZRANGE
ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANK ZREVRANK ZREMRANGEBYRANK ZREMRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX
ZLEXCOUNT ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZRANDMEMBER ZSCAN XADD XLEN XRANGE XREVRANGE XDEL XTRIM XACK XCLAIM
XAUTOCLAIM XPENDING XSETID PFADD SETBIT GETBIT BITCOUNT BITPOS BITFIELD BITFIELD_RO GEOADD GEOPOS GEODIST GEOHASH
GEOSEARCH GEORADIUS_RO GEORADIUSBYMEMBER_RO`;
const ALL_KEYS = "DEL UNLINK EXISTS TOUCH MGET SINTER SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE PFCOUNT PFMERGE";
const TWO_KEYS = "RENAME RENAMENX COPY SMOVE LMOVE RPOPLPUSH ZRANGESTORE GEOSEARCHSTORE LCS";
const NO_KEYS = "TIME PING ECHO DBSIZE LASTSAVE PUBLISH";

/** Key positions by upper-case command name. */
export const KEY_SPECS: Readonly<Record<string, KeySpec>> = Object.freeze({
  ...table(ONE_KEY, ONE),
  ...table(ALL_KEYS, ALL),
  ...table(TWO_KEYS, TWO),
  ...table(NO_KEYS, NONE),
  MSET: { first: 1, last: -1, step: 2 },
  MSETNX: { first: 1, last: -1, step: 2 },
  BITOP: { first: 2, last: -1, step: 1 },
  OBJECT: { first: 2, last: 2, step: 1 },
  MEMORY: { first: 2, last: 2, step: 1 },
  ...table("ZUNIONSTORE ZINTERSTORE ZDIFFSTORE", { ...ONE, numkeys: 2 }),
  ...table("ZUNION ZINTER ZDIFF SINTERCARD ZINTERCARD LMPOP ZMPOP", { ...NONE, numkeys: 1 }),
  ...table("EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO", { ...NONE, numkeys: 2 }),
});

/** Commands that need the whole database: refused inside a script flagged `allow-key-locking`. */
export const DATABASE_WIDE: readonly string[] = ["FLUSHDB", "FLUSHALL"];

/**
 * The key names in `command` (name first), or undefined for a command not in {@link KEY_SPECS}.
 * @example
 * commandKeys(["mset", "a", "1", "b", "2"]); // ["a", "b"]
 */
export function commandKeys(command: readonly string[]): string[] | undefined {
  const spec = KEY_SPECS[command[0].toUpperCase()];
  if (!spec) return undefined;
  const args = command.slice(1);
  const keys: string[] = [];
  if (spec.first > 0) {
    const last = spec.last < 0 ? args.length + spec.last + 1 : Math.min(spec.last, args.length);
    for (let i = spec.first; i <= last; i += spec.step) keys.push(args[i - 1]);
  }
  if (spec.numkeys !== undefined) {
    const count = Number(args[spec.numkeys - 1]);
    if (Number.isInteger(count) && count > 0) keys.push(...args.slice(spec.numkeys, spec.numkeys + count));
  }
  return keys;
}

function table(names: string, spec: KeySpec): Record<string, KeySpec> {
  return Object.fromEntries(
    names
      .split(/\s+/)
      .filter(Boolean)
      .map((name) => [name, spec]),
  );
}
