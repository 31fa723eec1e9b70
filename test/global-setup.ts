// Runs once in Node before the tests: make sure redis-server is there (installs it when root).
import { ensureRedisServer } from "../dev/redis-server.ts";

export default function setup(): void {
  ensureRedisServer();
}
