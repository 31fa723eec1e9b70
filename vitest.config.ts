import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { envNames } from "./src/node/env.ts";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    reporters: ["default", ["json", { outputFile: ".tmp/vitest-results.json" }]],
    hookTimeout: 30_000,
    // Each integration file starts its own five redis-server processes; two files at a time fit 2 cores.
    maxWorkers: 2,
    projects: [
      {
        // No redis-server and no network: `npm run test:unit` runs this project alone.
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
        },
      },
      {
        plugins: [
          cloudflareTest(({ inject }) => {
            const nodes = inject<{ url: string; token: string }[]>("clusterNodes");
            const bindings = Object.fromEntries(
              nodes.flatMap((n, i) => [
                [envNames(i + 1).url, n.url],
                [envNames(i + 1).token, n.token],
              ]),
            );
            return { wrangler: { configPath: "./wrangler.toml" }, miniflare: { bindings } };
          }),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          globalSetup: ["test/cluster-setup.ts"],
        },
      },
      {
        test: {
          name: "edge",
          environment: "edge-runtime",
          include: ["test/edge/**/*.test.ts"],
          globalSetup: ["test/cluster-setup.ts"],
        },
      },
    ],
  },
});
