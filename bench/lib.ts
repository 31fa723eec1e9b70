// What the benchmark imports from the library under test.
export { ACQUIRE, RELEASE, Redlock, type RedlockOptions } from "../src/index.ts";
export { scriptSha as scriptShaOf } from "../src/scripts.ts";
export { CLIENT_SETTINGS } from "../src/node.ts";
