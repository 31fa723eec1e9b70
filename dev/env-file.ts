// Reads `KEY=VALUE` files (.env, .dev.vars) the way dotenv and wrangler do: `doctor --env-file`, `dev --check`
// and `requireLocalNodes`.

/**
 * Parses the text of an env file: `KEY=VALUE` lines, `#` comments, an optional `export ` prefix,
 * values in single quotes (literal), double quotes (`\n` becomes a newline) or bare (trimmed, a ` #`
 * starts a comment).
 * @example
 * ```ts
 * parseEnvFile('UPSTASH_REDIS_REST_URL_1="https://eu1.example.io" # Frankfurt');
 * // { UPSTASH_REDIS_REST_URL_1: "https://eu1.example.io" }
 * ```
 */
export function parseEnvFile(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    const [, name, rest] = match;
    vars[name] = value(rest);
  }
  return vars;
}

function value(rest: string): string {
  const quote = rest[0];
  if (quote === '"' || quote === "'" || quote === "`") {
    const end = rest.indexOf(quote, 1);
    if (end > 0) {
      const inner = rest.slice(1, end);
      return quote === '"' ? inner.replace(/\\n/g, "\n").replace(/\\"/g, '"') : inner;
    }
  }
  return rest.replace(/\s+#.*$/, "").trim();
}
