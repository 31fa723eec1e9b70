// Deno entry: `deno run --allow-net --allow-env worker/deno.ts` (port from PORT, default 8787).
import { createApp } from "./app.ts";

const port = Number(Deno.env.get("PORT") ?? 8787);
Deno.serve({ port, hostname: "127.0.0.1" }, createApp().fetch);
