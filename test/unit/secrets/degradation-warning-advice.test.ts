// The degradation warning says what to change: a refused token names the token's variable (not the URL's),
// a refused connection names the URL's variable and how to start local nodes; the off switch is the
// Redlock option, and no token appears.
import { expect, it } from "vitest";
import { degradationWarning } from "../../../src/node/degradation-warning.ts";

it("a 401 names UPSTASH_REDIS_REST_TOKEN_2, for the node of UPSTASH_REDIS_REST_URL_2", () => {
  const text = degradationWarning(
    "UPSTASH_REDIS_REST_URL_2 (127.0.0.1:4012)",
    "WRONGPASS invalid or missing auth token",
  );
  expect(text).toMatch(/^edge-redlock: UPSTASH_REDIS_REST_URL_2 \(127\.0\.0\.1:4012\) failed \(WRONGPASS [^)]*\): /);
  expect(text).toContain("set UPSTASH_REDIS_REST_TOKEN_2 to the token of that database");
  expect(text).toContain("the Redlock option warnings: false turns it off");
});

it("a node given in code names the option of its token", () => {
  expect(degradationWarning("node 3 (eu.example.io)", "Unauthorized")).toContain("set nodes[2].token");
});

it("a refused connection names the URL's variable and the command that starts local nodes", () => {
  const text = degradationWarning("UPSTASH_REDIS_REST_URL_4 (127.0.0.1:4014)", "fetch failed (ECONNREFUSED)");
  expect(text).toContain("nothing answers at UPSTASH_REDIS_REST_URL_4");
  expect(text).toContain("npx edge-redlock dev");
});

it("a timeout gets no advice it cannot back", () => {
  expect(degradationWarning("UPSTASH_REDIS_REST_URL_1 (a.example.io)", "timeout")).toBe(
    "edge-redlock: UPSTASH_REDIS_REST_URL_1 (a.example.io) failed (timeout). Locks still work while a quorum answers, " +
      "with less room for further failures. Reported once a minute per node; the Redlock option warnings: false turns it off.",
  );
});
