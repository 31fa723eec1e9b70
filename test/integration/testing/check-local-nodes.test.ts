// checkLocalNodes (edge-redlock/testing): resolves when every node answers; otherwise one line naming each
// node that does not, its host and why, and how to start them; never a token.
import { describe, expect, it } from "vitest";
import { freePort } from "../../../dev/redis-server.ts";
import { envNames } from "../../../src/index.ts";
import { LocalNodesNotRunningError, checkLocalNodes } from "../../../src/testing/index.ts";
import { useCluster } from "../fixture.ts";

const env = useCluster();
const vars = () =>
  Object.fromEntries(
    env.cluster.nodes.flatMap((n, i) => [
      [envNames(i + 1).url, n.url],
      [envNames(i + 1).token, n.token],
    ]),
  );

describe("checkLocalNodes", () => {
  it("resolves when every node answers", async () => {
    await expect(checkLocalNodes(vars())).resolves.toBeUndefined();
  });

  it("names a refused connection, a refused token and a node that hangs, in one line without the token", async () => {
    const given = vars();
    const closed = await freePort(); // nothing listens there
    given.UPSTASH_REDIS_REST_URL_2 = `http://127.0.0.1:${closed}`;
    given.UPSTASH_REDIS_REST_TOKEN_3 = "not-the-token";
    await env.admins[4].faults({ hang: true });
    const error = await checkLocalNodes(given, { source: ".dev.vars", timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalNodesNotRunningError);
    const { message, failures } = error as LocalNodesNotRunningError;
    expect(message).not.toContain("\n");
    expect(failures).toEqual([
      `UPSTASH_REDIS_REST_URL_2 127.0.0.1:${closed}: ECONNREFUSED`,
      `UPSTASH_REDIS_REST_URL_3 ${new URL(given.UPSTASH_REDIS_REST_URL_3).host}: the token was refused (HTTP 401)`,
      `UPSTASH_REDIS_REST_URL_5 ${new URL(given.UPSTASH_REDIS_REST_URL_5).host}: no answer within 300 ms`,
    ]);
    expect(message).toBe(
      `edge-redlock: 3 of the 5 local nodes in .dev.vars do not answer (${failures.join("; ")}). Start them in another terminal: npx edge-redlock dev`,
    );
    for (const token of env.cluster.nodes.map((n) => n.token)) expect(message).not.toContain(token);
    await env.admins[4].faults({ hang: false });
  });

  it("says when no node is named at all", async () => {
    await expect(checkLocalNodes({}, { source: ".env" })).rejects.toThrow(
      "edge-redlock: .env names no node (no UPSTASH_REDIS_REST_URL_1): start them with npx edge-redlock dev",
    );
  });
});
