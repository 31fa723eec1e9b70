// The consumer test (test/consumer): the packed package in scratch projects for each runtime. Its own
// run after the other suites, so its builds and runtimes do not share the 2 cores with timing-sensitive tests.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "consumer",
    include: ["test/consumer/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 90_000,
    hookTimeout: 120_000,
    reporters: ["default", ["json", { outputFile: ".tmp/vitest-consumer-results.json" }]],
  },
});
