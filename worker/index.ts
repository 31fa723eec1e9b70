// Cloudflare Workers entry. Workers need a default export: the one exception to the project's named-exports rule.
import { createApp } from "./app.ts";

export default createApp();
