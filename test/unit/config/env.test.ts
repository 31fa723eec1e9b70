// fromEnv / nodesFromEnv take a Worker's `interface Env` (no index signature) and still refuse missing or
// empty variables; the CLI's env-file reader reads .dev.vars / .env lines.
import { describe, expect, expectTypeOf, it } from "vitest";
import { parseEnvFile } from "../../../cli/env-file.ts";
import { MissingConfigurationError, Redlock, nodesFromEnv } from "../../../src/index.ts";

/** As `wrangler types` writes it: an interface, with a binding that is not a string. */
interface Env {
  UPSTASH_REDIS_REST_URL_1: string;
  UPSTASH_REDIS_REST_TOKEN_1: string;
  UPSTASH_REDIS_REST_URL_2: string;
  UPSTASH_REDIS_REST_TOKEN_2: string;
  UPSTASH_REDIS_REST_URL_3: string;
  UPSTASH_REDIS_REST_TOKEN_3: string;
  MY_KV: { get(key: string): Promise<string | null> };
}

const workerEnv: Env = {
  UPSTASH_REDIS_REST_URL_1: "https://one.example.test",
  UPSTASH_REDIS_REST_TOKEN_1: "token-one",
  UPSTASH_REDIS_REST_URL_2: "https://two.example.test",
  UPSTASH_REDIS_REST_TOKEN_2: "token-two",
  UPSTASH_REDIS_REST_URL_3: "https://three.example.test",
  UPSTASH_REDIS_REST_TOKEN_3: "",
  MY_KV: { get: async () => null },
};

describe("fromEnv with a Worker's interface Env", () => {
  it("type-checks with an interface and builds the nodes it names", () => {
    expectTypeOf(Redlock.fromEnv).parameter(0).toEqualTypeOf<object>();
    const env: Env = { ...workerEnv, UPSTASH_REDIS_REST_TOKEN_3: "token-three" };
    expect(Redlock.fromEnv(env, { nodes: 3 }).nodes.map((n) => n.label)).toEqual([
      "UPSTASH_REDIS_REST_URL_1 (one.example.test)",
      "UPSTASH_REDIS_REST_URL_2 (two.example.test)",
      "UPSTASH_REDIS_REST_URL_3 (three.example.test)",
    ]);
  });

  it("still refuses a missing, empty or non-string variable with MissingConfigurationError, naming it", () => {
    const error = (() => {
      try {
        nodesFromEnv({ ...workerEnv, UPSTASH_REDIS_REST_URL_2: 42 }, { nodes: 4 });
      } catch (e) {
        return e;
      }
    })() as MissingConfigurationError;
    expect(error).toBeInstanceOf(MissingConfigurationError);
    expect(error.missing).toEqual([
      "UPSTASH_REDIS_REST_URL_2",
      "UPSTASH_REDIS_REST_TOKEN_3",
      "UPSTASH_REDIS_REST_URL_4",
      "UPSTASH_REDIS_REST_TOKEN_4",
    ]);
    expect(error.message).not.toContain("token-one");
    // It says where such variables are set.
    expect(error.message).toMatch(/TOKEN_4: on Workers, set them in \.dev\.vars .*wrangler secret put.*environment/);
    expect(() => Redlock.fromEnv(workerEnv, { nodes: 3 })).toThrow(MissingConfigurationError);
  });

  it("names the variable of a value it refuses, not nodes[i], and never repeats the value", () => {
    const env: Env = { ...workerEnv, UPSTASH_REDIS_REST_TOKEN_3: "token-three" };
    expect(() => Redlock.fromEnv({ ...env, UPSTASH_REDIS_REST_URL_3: "htps//oops" }, { nodes: 3 })).toThrow(
      "UPSTASH_REDIS_REST_URL_3 must be an http(s) URL (the database's REST URL, https://…)",
    );
    expect(() =>
      Redlock.fromEnv({ ...env, UPSTASH_REDIS_REST_URL_2: "rediss://default:pw@two.example.test:6379" }, { nodes: 3 }),
    ).toThrow("UPSTASH_REDIS_REST_URL_2 must be the database's REST URL (https://…), not its redis:// URL");
    const short = (() => {
      try {
        Redlock.fromEnv({ ...env, UPSTASH_REDIS_REST_TOKEN_3: "tiny" }, { nodes: 3 });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(short?.message).toMatch(/^UPSTASH_REDIS_REST_TOKEN_3 must be a string of at least 8/);
    expect(short?.message).not.toContain("tiny");
    expect(() =>
      Redlock.fromEnv({ ...env, UPSTASH_REDIS_REST_URL_3: env.UPSTASH_REDIS_REST_URL_1 }, { nodes: 3 }),
    ).toThrow("UPSTASH_REDIS_REST_URL_3 repeats another node");
    // Nodes given directly are still named by their place.
    expect(() => new Redlock([{ url: "htps//oops", token: "token-one" }])).toThrow(/^nodes\[0\]\.url must be/);
  });
});

describe("parseEnvFile (edge-redlock doctor --env-file)", () => {
  it("reads KEY=VALUE lines as dotenv and wrangler's .dev.vars do", () => {
    const text = [
      "# five databases",
      "UPSTASH_REDIS_REST_URL_1=https://eu1.example.test  # Frankfurt",
      'UPSTASH_REDIS_REST_TOKEN_1="AbC=="',
      "export UPSTASH_REDIS_REST_URL_2 = 'https://us1.example.test#not-a-comment'",
      'MULTI="a\\nb"',
      "",
      "not a variable line",
      "EMPTY=",
    ].join("\r\n");
    expect(parseEnvFile(text)).toEqual({
      UPSTASH_REDIS_REST_URL_1: "https://eu1.example.test",
      UPSTASH_REDIS_REST_TOKEN_1: "AbC==",
      UPSTASH_REDIS_REST_URL_2: "https://us1.example.test#not-a-comment",
      MULTI: "a\nb",
      EMPTY: "",
    });
  });
});
