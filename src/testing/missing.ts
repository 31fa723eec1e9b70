// What to do when a piece the local nodes need is not installed.

/** redis-server was not found (at `path`, when given): how to install it on each system. */
export function missingRedisServer(path?: string): Error {
  const where =
    path === undefined
      ? "redis-server is not installed (looked on PATH and in /usr/local/bin, /opt/homebrew/bin)."
      : `redis-server was not found at ${path}.`;
  return new Error(
    [
      `edge-redlock/testing: ${where}`,
      "Install it, then run this again:",
      "  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install -y redis-server",
      "  macOS:          brew install redis",
      "  Windows:        in WSL (Ubuntu): sudo apt-get update && sudo apt-get install -y redis-server,",
      "                  and run your tests inside WSL",
      'Or pass its path: startLocalNodes({ redisServer: "/path/to/redis-server" })',
      "(npx edge-redlock dev --redis-server /path/to/redis-server).",
      "Or, with nothing to install: memory nodes behind the same HTTP front, startLocalNodes({ memory: true })",
      "(npx edge-redlock dev --memory): the library's scripts on an in-process store, not a Redis server.",
    ].join("\n"),
  );
}

/** The ioredis package (the bridge's Redis client, an optional peer dependency) is not installed. */
export function missingIoredis(cause: unknown): Error {
  return new Error(
    "edge-redlock/testing: startLocalNodes needs the ioredis package (the local bridge's Redis client). " +
      "Install it as a dev dependency: npm install --save-dev ioredis (bun add -d ioredis; deno add npm:ioredis). " +
      "Or, with nothing to install: memory nodes, startLocalNodes({ memory: true }) (npx edge-redlock dev --memory)",
    { cause },
  );
}
