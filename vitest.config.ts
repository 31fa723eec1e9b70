import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each integration file starts its own five redis-server processes; two files at a time fit 2 cores.
    maxWorkers: 2,
  },
});
