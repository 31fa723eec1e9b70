// Failure texts without secrets: what a node or a client said, minus tokens, credentials and commands.

/** Below this length a secret is not searched for in texts; `checkToken` refuses shorter tokens. */
export const MIN_SECRET_LENGTH = 8;

/**
 * The text of an error as `@upstash/redis` throws it, without the command it appends
 * (`…, command was: [...]`, which holds keys, lock values and written data).
 * @example
 * ```ts
 * errorText(new Error("ERR wrong type, command was: [\"eval\", …]")); // "ERR wrong type"
 * ```
 */
export function errorText(error: unknown): string {
  const err = error as { message?: unknown } | undefined;
  const text = typeof err?.message === "string" ? err.message : String(error);
  return text.replace(/^Command failed: /, "").split(", command was:")[0];
}

/**
 * Takes every known secret out of `text`, and anything that looks like one: a whole quoted value that
 * holds bearer or basic credentials (a header value quoted in a message), the value after `Bearer` or
 * `Basic`, and URL userinfo.
 * @example
 * ```ts
 * redact('bad header "Bearer abc\nSECRET"', []); // 'bad header "[redacted]"'
 * ```
 */
export function redact(text: string, secrets: readonly string[]): string {
  for (const secret of secrets) if (secret.length >= MIN_SECRET_LENGTH) text = text.split(secret).join("[redacted]");
  return text
    .replace(/(["'`])(?:(?!\1)[\s\S])*?\b(?:Bearer|Basic)\b(?:(?!\1)[\s\S])*\1/gi, "$1[redacted]$1")
    .replace(/\b(Bearer|Basic)\s+[^\s"'`<>]+/gi, "$1 [redacted]")
    .replace(/\/\/[^/\s@]*@/g, "//[redacted]@");
}

/** How long a failure text may be in a tally or a report (characters). */
const MAX_TEXT = 160;

/**
 * `text` cut to a length that fits a tally or a report line, marked with `…` where it was cut.
 * @example
 * ```ts
 * clip("x".repeat(500)).length; // 161
 * ```
 */
export function clip(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}

/**
 * A failure's text with the system's error code where `fetch` hides it in `cause` (`ECONNREFUSED`, …).
 * @example
 * ```ts
 * failureText(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } })); // "fetch failed (ECONNREFUSED)"
 * ```
 */
export function failureText(error: unknown): string {
  const text = errorText(error);
  // `@upstash/redis` words an error status whose body names no error as `${body.error}`: "undefined" or "null".
  if (text === "undefined" || text === "null") return "HTTP error status without an error text";
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const detail = typeof cause?.code === "string" ? cause.code : typeof cause?.message === "string" ? cause.message : "";
  return detail && !text.includes(detail) ? `${text} (${detail})` : text;
}
