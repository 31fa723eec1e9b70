// What the benchmark imports from the library under test.
export { Redlock, type RedlockNode, type RedlockOptions } from "../src/index.ts";
export { ACQUIRE, FAIR_ACQUIRE, RELEASE, scriptSha as scriptShaOf } from "../src/scripts/index.ts";
export { CLIENT_SETTINGS } from "../src/node/upstash.ts";
export { CLAIM_MS, lineKey } from "../src/lock/line.ts";
export { waiterTicket } from "../src/support/random.ts";
